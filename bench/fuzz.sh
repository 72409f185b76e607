#!/usr/bin/env bash
# fuzz.sh: builds the libFuzzer targets in fuzz/ (clang, ASan + UBSan) in
# build-fuzz/ and runs each for FUZZ_SECONDS (default 60), one after another
# on one core, starting from the committed seed corpus in fuzz/corpus/<name>/.
# Prints per target the executions, the coverage (edges, features) and
# whether it crashed (and any error lines libraries logged); a crashing input
# lands in bench/out/fuzz/<name>/.
#
#   bench/fuzz.sh                         # all targets, 60 s each
#   FUZZ_SECONDS=10 bench/fuzz.sh spec    # one target, 10 s
#
# Needs clang and libFuzzer's runtime: apt-get install clang libclang-rt-14-dev
# (deploy/setup.sh does not install them; only this script uses them).
# New inputs the fuzzers find go to bench/out/fuzz/<name>/corpus, not to the
# committed corpus: add an input to fuzz/corpus/<name>/ by hand, with the fix
# it shows the need for (the unit test fuzz_<name>_replay_test replays it).
# Exit status: 0 when no target crashed, 1 otherwise, 2 when clang is missing.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
SECONDS_EACH=${FUZZ_SECONDS:-60}
BUILD=${FUZZ_BUILD:-build-fuzz}
TARGETS=("$@")
if [ ${#TARGETS[@]} -eq 0 ]; then
  TARGETS=(schedule spec shard eval_file http_query http_head)
fi

if ! command -v clang++ >/dev/null ||
   ! ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a \
       >/dev/null 2>&1; then
  echo "fuzz.sh: needs clang++ and libFuzzer: apt-get install clang libclang-rt-14-dev" >&2
  exit 2
fi

CC=clang CXX=clang++ cmake -S . -B "$BUILD" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPRISM_FUZZ=ON \
  -DPRISM_BUILD_TESTS=OFF -DPRISM_BUILD_BENCH=OFF >/dev/null
cmake --build "$BUILD" -j "${JOBS:-2}" \
  --target "${TARGETS[@]/%/_fuzzer}"

OUT=bench/out/fuzz
status=0
printf '%-11s %8s %12s %9s %7s %7s %7s  %s\n' target seconds executions \
  execs/s cov ft corpus result
for name in "${TARGETS[@]}"; do
  dir=$OUT/$name
  rm -rf "$dir"
  mkdir -p "$dir/corpus"
  # The first corpus dir receives new inputs; the committed one is read only.
  # 4 KiB inputs cover every format's edge cases (the shard and eval headers
  # are 1 KiB); 10 s for one input is a hang.
  # A target's dictionary (fuzz/<name>.dict) names its syntax's keywords.
  dict=()
  if [ -f "fuzz/$name.dict" ]; then dict=(-dict="fuzz/$name.dict"); fi
  set +e
  "$BUILD/fuzz/${name}_fuzzer" -max_total_time="$SECONDS_EACH" \
    -max_len=4096 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    "${dict[@]}" -artifact_prefix="$dir/" "$dir/corpus" "fuzz/corpus/$name" \
    >"$dir/log.txt" 2>&1
  rc=$?
  set -e
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log.txt")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$dir/log.txt")
  last=$(grep -E '^#[0-9]+' "$dir/log.txt" | tail -1)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$last")
  artifacts=$(find "$dir" -maxdepth 1 -type f \
    \( -name 'crash-*' -o -name 'leak-*' -o -name 'oom-*' \
       -o -name 'timeout-*' \) | tr '\n' ' ')
  if [ "$rc" -eq 0 ] && [ -z "$artifacts" ]; then
    result=ok
  else
    result="CRASH (exit $rc) ${artifacts:-see $dir/log.txt}"
    status=1
  fi
  printf '%-11s %8s %12s %9s %7s %7s %7s  %s\n' "$name" "$SECONDS_EACH" \
    "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$result"
  if [ "$result" != ok ]; then
    grep -E 'ERROR|SUMMARY|fuzz check failed|runtime error' "$dir/log.txt" |
      head -5 | sed 's/^/    /'
  fi
  # Libraries that log instead of failing (protobuf's invalid UTF-8 warning
  # found a real bug) show up here, not as crashes.
  logged=$(grep -cE '^\[libprotobuf (ERROR|WARNING)' "$dir/log.txt" || true)
  if [ "$logged" -gt 0 ]; then
    echo "    $logged library error lines, the first:"
    grep -m1 -E '^\[libprotobuf (ERROR|WARNING)' "$dir/log.txt" |
      sed 's/^/    /'
  fi
done
exit $status
