#!/usr/bin/env bash
# gpu_check.sh: the trainer on an NVIDIA GPU. Builds scheduler/ + model/ +
# bench/train_bench against the machine's CUDA LibTorch (the one bundled with
# Python's torch 2.x), then trains the 124m preset for a few hundred steps,
# the uniform baseline 12x12 against the Prism schedule 3x3,6x3,12x6, and
# prints tokens/s and MFU (against a measured bf16 matmul peak) side by side.
# Budget: under 8 minutes in all (build about 3, training about 2 x 1.5).
#
#   bench/gpu/pack_deps.sh                  # on the Debian machine, once
#   bench/gpu_check.sh [DEPS [STEPS]]       # on the GPU machine, repo root
#
# DEPS (default build-gpu-deps) is pack_deps.sh's folder: Debian's Abseil,
# fmt and CLI11, and the prepared demo shards. Output: bench/out/gpu_check.txt
# (copy its table to bench/RESULTS.md, "Trainer").
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
DEPS=$(cd "${1:-build-gpu-deps}" && pwd)
STEPS=${2:-300}
WARMUP=20
PYTHON=${PYTHON:-python3}
ARCH=x86_64-linux-gnu
mkdir -p bench/out
OUT=bench/out/gpu_check.txt

{
  date -u
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  "$PYTHON" -c 'import torch; print("torch", torch.__version__, "cuda",
      torch.version.cuda, torch.cuda.get_device_name(0))'
} | tee "$OUT"

TORCH_PKG=$("$PYTHON" -c 'import os, torch; print(os.path.dirname(torch.__file__))')
ABI=$("$PYTHON" -c 'import torch; print(int(torch._C._GLIBCXX_USE_CXX11_ABI))')
CMAKE_ARGS=(
  -DCMAKE_BUILD_TYPE=Release
  -Dabsl_DIR="$DEPS/usr/lib/$ARCH/cmake/absl"
  -Dfmt_DIR="$DEPS/usr/lib/$ARCH/cmake/fmt"
  -DCLI11_DIR="$DEPS/usr/share/cmake/CLI11"
)
if command -v nvcc >/dev/null 2>&1; then
  CMAKE_ARGS+=(-DCMAKE_PREFIX_PATH="$TORCH_PKG/share/cmake")
else
  # No CUDA toolkit: TorchConfig would refuse; link the wheel's libraries.
  CMAKE_ARGS+=(-DPRISM_TORCH_DIR="$TORCH_PKG" -DPRISM_TORCH_CXX11_ABI="$ABI")
fi
GENERATOR=("Unix Makefiles")
command -v ninja >/dev/null 2>&1 && GENERATOR=(Ninja)
timeout 120 cmake -S bench/gpu -B build-gpu -G "${GENERATOR[@]}" "${CMAKE_ARGS[@]}"
timeout 300 cmake --build build-gpu -j "$(nproc)" --target train_bench

export LD_LIBRARY_PATH="$DEPS/usr/lib/$ARCH:$TORCH_PKG/lib:${LD_LIBRARY_PATH:-}"
export PRISM_DATA_DIR="$DEPS/data"
timeout 420 build-gpu/train_bench --preset 124m --threads "$(nproc)" \
  --steps "$STEPS" --warmup "$WARMUP" --rounds 1 --no-ablations \
  --schedules "12x12;3x3,6x3,12x6" | tee -a "$OUT"
