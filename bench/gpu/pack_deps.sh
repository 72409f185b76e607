#!/usr/bin/env bash
# pack_deps.sh: gather what bench/gpu_check.sh needs from this Debian 12
# machine into one folder to carry to a GPU machine: Debian's Abseil, fmt and
# CLI11 (headers, shared libraries, CMake package files) and the prepared
# fortunes demo shards (byte tokens are valid in any vocabulary, so the 124m
# preset trains on them too).
#
#   bench/gpu/pack_deps.sh [OUT]        # default OUT: build-gpu-deps
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:-$ROOT/build-gpu-deps}
ARCH=x86_64-linux-gnu
rm -rf "$OUT"
mkdir -p "$OUT/usr/include" "$OUT/usr/lib/$ARCH/cmake" "$OUT/usr/share/cmake"
cp -a /usr/include/absl /usr/include/fmt /usr/include/CLI "$OUT/usr/include/"
cp -a /usr/lib/$ARCH/libabsl_*.so* /usr/lib/$ARCH/libfmt.so* "$OUT/usr/lib/$ARCH/"
cp -a /usr/lib/$ARCH/cmake/absl /usr/lib/$ARCH/cmake/fmt "$OUT/usr/lib/$ARCH/cmake/"
cp -a /usr/share/cmake/CLI11 "$OUT/usr/share/cmake/"

# The demo corpus, prepared by the trainer's own code if it is not yet.
DATA=${PRISM_DATA_DIR:-$ROOT/prism-data}
if [ ! -f "$DATA/corpus/fortunes/train_000000.bin" ]; then
  "${PRISM:-$ROOT/build/cli/prism}" data prepare --input /usr/share/games/fortunes \
    --out "$DATA/corpus/fortunes" >/dev/null
fi
mkdir -p "$OUT/data/corpus/fortunes"
cp "$DATA"/corpus/fortunes/{train,val}_000000.bin "$OUT/data/corpus/fortunes/"
du -sh "$OUT"
