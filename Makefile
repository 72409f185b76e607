# Convenience front door; the README's two commands use `make run` and
# `make test` after deploy/setup.sh. Everything real lives in CMake.
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: configure build run test test-unit format-check clean

configure:
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

run: build
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
