# Convenience front door; the README's two commands use `make run` and
# `make test` after deploy/setup.sh. Everything real lives in CMake.
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: configure build prism run test test-unit format-check clean

configure:
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

# `make run` builds only what it runs: the prism binary and the dashboard's
# assets (its dependency), not the tests and benchmarks.
prism: configure
	@cmake --build $(BUILD) -j $(JOBS) --target prism

run: prism
	$(BUILD)/cli/prism run

test: format-check build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

test-unit: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) -L unit

format-check:
	@git ls-files '*.cc' '*.h' | xargs clang-format --dry-run --Werror
	@echo "format-check: clang-format clean"

clean:
	rm -rf $(BUILD)
