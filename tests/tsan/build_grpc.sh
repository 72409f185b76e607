#!/usr/bin/env bash
# build_grpc.sh OUT_DIR: builds ThreadSanitizer-instrumented copies of the
# installed gRPC's shared libraries (libgrpc, libgrpc++, libgpr, and the
# libupb and libaddress_sorting they link) into OUT_DIR, from Debian's source
# package of the very version installed, under the same sonames, for
# `make test-tsan` to put first on LD_LIBRARY_PATH.
#
# Why: with Debian's uninstrumented gRPC, TSan sees the memcpy/new/delete
# that gRPC's core and its inline C++ API (compiled into our binaries) make,
# but not the atomics and closures gRPC orders them with, so it reports a
# call's metadata, slices and reactor lifetime handed between gRPC's threads
# as races (bench/RESULTS.md, "Sanitizers": 1,798 reports in the server
# tests, none with both accesses in our code). Instrumented, gRPC's own
# synchronization is visible and no suppression of gRPC is needed.
#
# Configured as debian/rules configures the shared build (system Abseil,
# c-ares, protobuf, RE2, OpenSSL, zlib), without tests or code generators.
# Costs about 850 compile steps: tens of minutes on 2 cores.
#
# Needs: g++ with libtsan, cmake, ninja, the -dev packages above (installed
# with libgrpc++-dev), and what debian_source.sh needs.
set -euo pipefail

out=$(realpath -m "${1:?usage: build_grpc.sh OUT_DIR}")
libs=(libgrpc++.so libgrpc.so libgpr.so libupb.so libaddress_sorting.so)
sonames=()
for l in "${libs[@]}"; do
  sonames+=("$(objdump -p "$(readlink -f "$(g++ -print-file-name="$l")")" |
    awk '/SONAME/ {print $2}')")
done
missing=0
for s in "${sonames[@]}"; do [[ -f "$out/$s" ]] || missing=1; done
if [[ $missing == 0 ]]; then
  echo "build_grpc: ${sonames[*]} are in $out"
  exit 0
fi
version=$(dpkg-query -W -f='${source:Version}' libgrpc-dev)
src=$(bash "$(dirname "$0")/debian_source.sh" "$out" grpc "$version")
protoc_lib=$(readlink -f "$(g++ -print-file-name=libprotoc.so)")
[[ -f "$protoc_lib" ]] ||
  protoc_lib=$(ls /usr/lib/*/libprotoc.so.* | head -1)
launcher=()
command -v ccache >/dev/null &&
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$src" -B "$out/build" -G Ninja "${launcher[@]}" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_FLAGS=-fsanitize=thread -DCMAKE_CXX_FLAGS=-fsanitize=thread \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" \
  -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread \
  -DBUILD_SHARED_LIBS=ON -DgRPC_BUILD_TESTS=OFF -DgRPC_BUILD_CODEGEN=OFF \
  -DgRPC_ABSL_PROVIDER=package -DgRPC_CARES_PROVIDER=package \
  -DgRPC_BENCHMARK_PROVIDER=package -DgRPC_PROTOBUF_PROVIDER=package \
  -DgRPC_RE2_PROVIDER=package -DgRPC_SSL_PROVIDER=package \
  -DgRPC_ZLIB_PROVIDER=package -DgRPC_BACKWARDS_COMPATIBILITY_MODE=OFF \
  -DProtobuf_PROTOC_LIBRARY="$protoc_lib" >/dev/null
cmake --build "$out/build" -j "${JOBS:-$(nproc)}" \
  --target grpc++ grpc gpr upb address_sorting
for s in "${sonames[@]}"; do
  cp -L "$out/build/$s" "$out/$s.tmp"
  mv "$out/$s.tmp" "$out/$s"
done
echo "build_grpc: built ${sonames[*]} from grpc $version with -fsanitize=thread"
