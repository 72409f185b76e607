#!/usr/bin/env bash
# build_absl.sh OUT_DIR: builds a ThreadSanitizer-instrumented copy of the
# installed Abseil's libabsl_synchronization (absl::Mutex, CondVar,
# Notification) into OUT_DIR, from Debian's source package of the very
# version installed, for `make test-tsan` to put first on LD_LIBRARY_PATH.
#
# Why: Debian's libabsl_synchronization is not instrumented, so TSan sees no
# lock or unlock of an absl::Mutex and reports every GUARDED_BY field that
# two threads touch, each under the lock, as a data race (shown by
# tests/tsan/absl_mutex_probe.cc: its guarded counter is reported with
# Debian's library, not with this one, while its unguarded counter is
# reported with both; bench/RESULTS.md, "Sanitizers"). Built with TSan,
# mutex.cc calls TSan's mutex annotations. Abseil's own thread-identity bookkeeping inside
# that library still races on memory from the uninstrumented
# libabsl_base/malloc_internal; tests/tsan/tsan.supp drops only races whose
# top frame is in this library.
#
# Needs: g++ with libtsan, and what debian_source.sh needs (dpkg-dev,
# network to Debian's archive; the system's apt configuration is left as
# it is).
set -euo pipefail

out=$(realpath -m "${1:?usage: build_absl.sh OUT_DIR}")
lib=$(readlink -f "$(g++ -print-file-name=libabsl_synchronization.so)")
soname=$(objdump -p "$lib" | awk '/SONAME/ {print $2}')
if [[ -f "$out/$soname" ]]; then
  echo "build_absl: $out/$soname is there"
  exit 0
fi
version=$(dpkg-query -W -f='${source:Version}' libabsl-dev)
src=$(bash "$(dirname "$0")/debian_source.sh" "$out" abseil "$version")
# The synchronization library's sources, as absl/synchronization/
# CMakeLists.txt lists them for the `synchronization` target; its other
# dependencies stay Debian's.
cd "$src"
deps=()
for need in $(objdump -p "$lib" | awk '/NEEDED/ && /libabsl_/ {print $2}'); do
  deps+=("-l:$need")
done
g++ -std=c++17 -O1 -g -fPIC -shared -fsanitize=thread -I. \
  absl/synchronization/barrier.cc absl/synchronization/blocking_counter.cc \
  absl/synchronization/internal/create_thread_identity.cc \
  absl/synchronization/internal/per_thread_sem.cc \
  absl/synchronization/internal/waiter.cc \
  absl/synchronization/notification.cc absl/synchronization/mutex.cc \
  -Wl,-soname,"$soname" "${deps[@]}" -o "$out/$soname.tmp"
mv "$out/$soname.tmp" "$out/$soname"
echo "build_absl: built $out/$soname from abseil $version with -fsanitize=thread"
