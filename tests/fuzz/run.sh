#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan, in build-sanitize/ unless AGGSIM_FUZZ_BUILD says
# otherwise; tests/sanitize/run.sh shares that tree) and runs each for a bounded time on a seed
# corpus made of the shipped scenarios, platforms, measurement logs and MSCCL programs plus the regression inputs
# in tests/fuzz/regressions/. Any crash, sanitizer report, leak, hang (> 10 s on one input) or
# input using more than 2 GB fails the run; libFuzzer then writes the input as crash-* /
# timeout-* / oom-* in the build folder.
#   tests/fuzz/run.sh            60 s per target
#   tests/fuzz/run.sh 10         10 s per target (what ctest runs)
#   tests/fuzz/run.sh 3600       an hour per target (see tests/fuzz/README.md for long runs)
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-60}
build=${AGGSIM_FUZZ_BUILD:-build-sanitize}
# AGGSIM_SANITIZE_PREBUILT=1: the tree is already built (ctest builds it once, in a setup test).
[ "${AGGSIM_SANITIZE_PREBUILT:-0}" = 1 ] ||
  tests/sanitize/configure.sh "$build" fuzz_scenario fuzz_sweep fuzz_platform_xml fuzz_measurements fuzz_tuning_lines fuzz_msccl_program

corpus="$build/fuzz-corpus"
for kind in scenario sweep platform measurement tuning msccl_program; do mkdir -p "$corpus/$kind-seeds" "$corpus/$kind"; done
find scenarios -name '*.yaml' -exec cp {} "$corpus/scenario-seeds/" \;
cp tests/fuzz/regressions/scenario/* "$corpus/scenario-seeds/" 2>/dev/null || true
cp scenarios/sweeps/*.yaml tests/fuzz/regressions/sweep/* "$corpus/sweep-seeds/"
cp platforms/*.xml "$corpus/platform-seeds/"
cp tests/fuzz/regressions/platform/* "$corpus/platform-seeds/" 2>/dev/null || true
cp tests/data/calibration/*.log "$corpus/measurement-seeds/"
cp tests/fuzz/regressions/measurement/* "$corpus/measurement-seeds/" 2>/dev/null || true
cp tests/data/nccl_info/*.log tests/data/calibration/a100_ib_1node_all_reduce.log "$corpus/tuning-seeds/"
cp tests/fuzz/regressions/tuning/* "$corpus/tuning-seeds/" 2>/dev/null || true
# The shipped and the test programs share some names: keep both copies.
for f in algorithms/msccl/programs/*.xml; do cp "$f" "$corpus/msccl_program-seeds/shipped-${f##*/}"; done
for f in tests/data/msccl/*.xml; do cp "$f" "$corpus/msccl_program-seeds/test-${f##*/}"; done
cp tests/fuzz/regressions/msccl_program/* "$corpus/msccl_program-seeds/"

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# target:corpus kind
for pair in scenario:scenario sweep:sweep platform_xml:platform measurements:measurement tuning_lines:tuning msccl_program:msccl_program; do
  target=${pair%%:*}
  seeds="$corpus/${pair##*:}-seeds"
  work="$corpus/${pair##*:}"
  echo "fuzzing $target for ${seconds} s"
  "$build/tests/fuzz/fuzz_$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="$build/fuzz-$target-" "$work" "$seeds" 2>&1 | tail -n 12
done
