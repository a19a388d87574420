#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan, in build-sanitize/ unless AGGSIM_FUZZ_BUILD says
# otherwise; tests/sanitize/run.sh shares that tree) and runs each for a bounded time on a seed corpus made of the shipped scenarios and
# platforms plus the regression inputs in tests/fuzz/regressions/. Any crash, sanitizer report,
# leak, hang (> 10 s on one input) or input using more than 2 GB fails the run; libFuzzer then
# writes the input as crash-* / timeout-* / oom-* in the build folder.
#   tests/fuzz/run.sh            60 s per target
#   tests/fuzz/run.sh 30         30 s per target (what ctest runs)
#   tests/fuzz/run.sh 3600       an hour per target (see tests/fuzz/README.md for long runs)
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-60}
build=${AGGSIM_FUZZ_BUILD:-build-sanitize}
# AGGSIM_SANITIZE_PREBUILT=1: the tree is already built (ctest builds it once, in a setup test).
[ "${AGGSIM_SANITIZE_PREBUILT:-0}" = 1 ] || tests/sanitize/configure.sh "$build" fuzz_scenario fuzz_platform_xml fuzz_msccl_program

corpus="$build/fuzz-corpus"
mkdir -p "$corpus/scenario-seeds" "$corpus/platform-seeds" "$corpus/scenario" "$corpus/platform" \
  "$corpus/msccl_program-seeds" "$corpus/msccl_program"
find scenarios -name '*.yaml' -exec cp {} "$corpus/scenario-seeds/" \;
cp tests/fuzz/regressions/scenario/* "$corpus/scenario-seeds/" 2>/dev/null || true
cp platforms/*.xml "$corpus/platform-seeds/"
cp tests/fuzz/regressions/platform/* "$corpus/platform-seeds/" 2>/dev/null || true
cp algorithms/msccl/programs/*.xml tests/data/msccl/*.xml "$corpus/msccl_program-seeds/"

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
for target in scenario platform_xml msccl_program; do
  seeds="$corpus/${target%_xml}-seeds"
  work="$corpus/${target%_xml}"
  echo "fuzzing $target for ${seconds} s"
  "$build/tests/fuzz/fuzz_$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="$build/fuzz-$target-" "$work" "$seeds" 2>&1 | tail -n 12
done
