# Convenience front door; the README's two commands use `make run` and
# `make test` after deploy/setup.sh. Everything real lives in CMake.
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: configure build prism run test test-unit format-check clean \
	check-thread-safety test-asan test-tsan screenshot

# One build serves everything: clang, with its thread-safety analysis on (a
# GUARDED_BY field touched without its mutex fails the build), Release, tests
# and benchmarks included. A build dir configured with another compiler (an
# older checkout's gcc build) is reconfigured from scratch.
configure:
	@if [ -f $(BUILD)/CMakeCache.txt ] && \
	  ! grep -q '^CMAKE_CXX_COMPILER:[A-Z]*=.*clang++' $(BUILD)/CMakeCache.txt; then \
	  echo "configure: $(BUILD) was configured with another compiler; reconfiguring with clang"; \
	  rm -rf $(BUILD)/CMakeCache.txt $(BUILD)/CMakeFiles; \
	fi
	@CC=clang CXX=clang++ cmake -S . -B $(BUILD) -G Ninja \
	  -DCMAKE_BUILD_TYPE=Release -DPRISM_THREAD_SAFETY=ON >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

# `make run` builds only what it runs: the prism binary and the dashboard's
# assets (its dependency), not the tests and benchmarks.
prism: configure
	@cmake --build $(BUILD) -j $(JOBS) --target prism

run: prism
	$(BUILD)/cli/prism run

# The whole suite, as CI runs it: formatting, the build (which is also
# clang's thread-safety check), then every test.
test: format-check build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

test-unit: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) -L unit

# Clang's thread-safety analysis over every library the prism binary links
# (the build above runs it on everything; this is the quick way to run it
# alone).
check-thread-safety: configure
	cmake --build $(BUILD) -j $(JOBS) --target prism
	@echo "check-thread-safety: clang -Wthread-safety clean"

# ASan + UBSan over the unit and integration tests (LibTorch, gRPC and
# OpenBLAS themselves are not instrumented).
test-asan:
	@cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DPRISM_SANITIZE=address -DPRISM_BUILD_BENCH=OFF >/dev/null
	cmake --build build-asan -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir build-asan --output-on-failure -j $(JOBS) \
	  -L 'unit|integration'

# TSan over the coordinator's, the worker's and the storage tests, binary by
# binary (ctest names tests by case, not by binary). Debian's Abseil and
# gRPC are not instrumented, so TSan would see no absl::Mutex lock and none
# of gRPC's own ordering, and call every guarded field and every buffer gRPC
# hands between its threads a race: tests/tsan/build_absl.sh and
# build_grpc.sh build instrumented copies (libabsl_synchronization; libgrpc,
# libgrpc++, libgpr, libupb, libaddress_sorting) from Debian's source of the
# installed versions, put first on LD_LIBRARY_PATH; tests/tsan/tsan.supp
# says what it suppresses and why. The gRPC build is the long part (about
# 850 compile steps, once).
TSAN_TESTS = server_coordinator_leases_test server_coordinator_ingest_test \
	server_coordinator_restart_test server_coordinator_reads_test \
	server_coordinator_auth_test server_coordinator_specs_test \
	server_coordinator_strategies_test server_coordinator_request_size_test \
	server_queue_test server_limits_test \
	server_results_test server_http_test sqlite_store_test backup_test \
	worker_test report_buffer_test statistics_test
TSAN_LIBS = $(CURDIR)/build-tsan/absl:$(CURDIR)/build-tsan/grpc
test-tsan:
	@cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DPRISM_SANITIZE=thread -DPRISM_BUILD_BENCH=OFF >/dev/null
	bash tests/tsan/build_absl.sh build-tsan/absl
	JOBS=$(JOBS) bash tests/tsan/build_grpc.sh build-tsan/grpc
	cmake --build build-tsan -j $(JOBS) --target $(TSAN_TESTS)
	@for t in $(TSAN_TESTS); do \
	  echo "test-tsan: $$t"; \
	  LD_LIBRARY_PATH=$(TSAN_LIBS) \
	  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$(CURDIR)/tests/tsan/tsan.supp \
	    $$(find build-tsan/tests -name $$t -type f) --gtest_brief=1 || exit 1; \
	done
	@echo "test-tsan: clean"

# docs/dashboard.png, the README's screenshot, regenerated from the browser
# test's run (tests/browser/dashboard_test.mjs): its 1280x800 window over the
# finished experiment's leaderboard. The old artifact goes first, so a
# skipped test (no Chromium) cannot leave a stale picture to copy.
SCREENSHOT = $(BUILD)/browser-artifacts/dashboard.png
screenshot: prism
	@rm -f $(SCREENSHOT)
	ctest --test-dir $(BUILD) -L browser --output-on-failure
	@test -f $(SCREENSHOT) || { echo "screenshot: the browser test wrote no $(SCREENSHOT) (skipped?)"; exit 1; }
	cp $(SCREENSHOT) docs/dashboard.png
	@echo "screenshot: docs/dashboard.png, $$(stat -c %s docs/dashboard.png) bytes"

format-check:
	@git ls-files '*.cc' '*.h' | xargs clang-format --dry-run --Werror
	@echo "format-check: clang-format clean"

clean:
	rm -rf $(BUILD)
