#!/usr/bin/env bash
# Builds aggsim and its tests with AddressSanitizer + UndefinedBehaviorSanitizer (including
# float-cast-overflow: double -> integer conversions that do not fit), in build-sanitize/ unless
# AGGSIM_SANITIZE_BUILD says otherwise (the same tree as tests/fuzz/run.sh: clang, with the fuzz
# targets' coverage instrumentation too), and runs them. That build uses SimGrid's thread contexts
# (raw contexts switch stacks behind ASan's back). Any sanitizer report fails the run.
#   tests/sanitize/run.sh             what ctest runs: --pairings (the fuzz targets cover the loader
#                                     and the platform checker under the same sanitizers)
#   tests/sanitize/run.sh --hostile   100 cases of the hostile corpus (tests/hostile/) against the
#                                     sanitized aggsim, then --pairings
#   tests/sanitize/run.sh --tests     also builds the test programs sanitized and runs the tests/sim
#                                     input, platform and output tests, the ring, halving-doubling
#                                     and parameter-server tests (longer: it compiles them with ASan)
#   tests/sanitize/run.sh --pairings  every algorithm x compressor pairing the loader accepts,
#                                     4 ranks on 2 two-GPU nodes, 2 steps, under the sanitized aggsim,
#                                     after the refusals (racing and wrapping MSCCL programs,
#                                     overflowing sizes) that must exit 2 cleanly
#   tests/sanitize/run.sh --all       the whole ctest suite (slow: thread contexts and ASan)
# AGGSIM_SANITIZE_PREBUILT=1: aggsim is already built in the tree (ctest builds it in a setup test).
set -euo pipefail
cd "$(dirname "$0")/../.."
mode=${1:-subset}
build=${AGGSIM_SANITIZE_BUILD:-build-sanitize}
prebuilt=${AGGSIM_SANITIZE_PREBUILT:-0}
[ "$prebuilt" = 1 ] || { [ "$mode" = --pairings ] && [ -n "${AGGSIM_BIN:-}" ]; } || tests/sanitize/configure.sh "$build"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

pairings() {
  # AGGSIM_BIN: check the pairings with another binary (e.g. the normal build) instead.
  local aggsim=${AGGSIM_BIN:-$build/aggsim} work
  [ -n "${AGGSIM_BIN:-}" ] || [ "$prebuilt" = 1 ] || cmake --build "$build" --target aggsim
  work=$(mktemp -d)
  trap 'rm -rf "$work"' RETURN
  # Names from `aggsim list`: the two-space-indented first words of its first two sections.
  local algorithms compressors
  algorithms=$("$aggsim" list | awk '/^Algorithms/{s=1;next} /^$/{s=0} s && /^  [a-z]/{print $1}')
  compressors=$("$aggsim" list | awk '/^Compressors/{s=1;next} /^$/{s=0} s && /^  [a-z]/{print $1}')
  local ran=0 refused=0
  for a in $algorithms; do
    # Keys an algorithm needs besides its name (tests/support/algorithm_keys.hpp).
    local keys=""
    [ "$a" = msccl ] && keys=", program: $PWD/tests/data/msccl/ring_allreduce_4.xml"
    for c in $compressors; do
      cat >"$work/s.yaml" <<YAML
name: pair
ranks: 4
steps: 2
platform: {topology: cluster, nodes: 2, gpus_per_node: 2}
network: alpha_beta
model: {size: 64kB, proxy_dim: 256}
algorithm: {name: $a$keys}
compression: {name: $c}
YAML
      # run refuses what validate refuses, with the same message and exit 2 (tests/sim checks that
      # they agree); one process per pairing instead of two halves the sanitized start-ups.
      set +e
      "$aggsim" run "$work/s.yaml" --out "$work/out" --force -q >"$work/run.txt" 2>&1
      local status=$?
      set -e
      if [ $status -eq 2 ] && [ "$c" != none ]; then  # every algorithm runs uncompressed
        refused=$((refused + 1))
        continue
      fi
      if [ $status -ne 0 ]; then
        echo "FAILED: run $a x $c exited $status"; cat "$work/run.txt"; return 1
      fi
      ran=$((ran + 1))
    done
  done
  echo "pairings: $ran ran clean under ASan/UBSan, $refused refused by the loader (exit 2)"
}

# The refusals of reliability round three under the sanitizers: MSCCL programs whose sum wraps a
# 64-bit count or whose threadblocks race, and sizes whose loop counts overflow 32 and 64 bits. Each
# must be refused (exit 2) by validate and run alike, with no sanitizer report.
refusals() {
  local aggsim=${AGGSIM_BIN:-$build/aggsim} work checked=0
  work=$(mktemp -d)
  trap 'rm -rf "$work"' RETURN
  local cases=()
  for program in tests/fuzz/regressions/msccl_program/ring4-*.xml; do
    cases+=("algorithm: {name: msccl, program: $PWD/$program}|")
  done
  for size in 8EiB 64PiB 16TiB; do
    cases+=("algorithm: {name: msccl, program: $PWD/tests/data/msccl/ring_allreduce_4.xml}|$size")
  done
  for size in 8EiB 64PiB; do cases+=("algorithm: {name: nccl_allreduce}|$size"); done
  for c in "${cases[@]}"; do
    local size=${c#*|} math=on
    [ -n "$size" ] && math=off
    cat >"$work/s.yaml" <<YAML
name: refusal
ranks: 4
steps: 1
platform: {topology: cluster, nodes: 1, gpus_per_node: 4}
network: alpha_beta
model: {size: ${size:-64kB}, proxy_dim: 256, math: $math}
${c%%|*}
YAML
    for verb in validate run; do
      local args=("$verb" "$work/s.yaml")
      [ "$verb" = run ] && args+=(--out "$work/out" --force -q)
      set +e
      "$aggsim" "${args[@]}" >"$work/out.txt" 2>&1
      local status=$?
      set -e
      if [ $status -ne 2 ]; then
        echo "FAILED: $verb of ${c%%|*} (size ${size:-64kB}) exited $status, not 2"; cat "$work/out.txt"; return 1
      fi
      [ -n "${SHOW_REFUSALS:-}" ] && head -c 300 "$work/out.txt"
      checked=$((checked + 1))
    done
  done
  echo "refusals: $checked refused cleanly under ASan/UBSan"
}

hostile() {
  [ "$prebuilt" = 1 ] || cmake --build "$build" --target aggsim
  tests/hostile/ctest.sh "$build/hostile-corpus" "$build/aggsim" 100  # --timeout 30 s per case
}

case "$mode" in
  --pairings) refusals; pairings ;;
  --all)
    cmake --build "$build"
    ctest --test-dir "$build" --output-on-failure -j2 -LE robustness ;;
  --tests)
    cmake --build "$build" --target aggsim aggsim_sim_tests aggsim_algorithms_tests
    ctest --test-dir "$build" --output-on-failure -j2 --no-tests=error \
      -R '^(sim:.*(input|platform errors|bad|run folder|run writes|byte-identical)|algorithms:.*(ring|halving|parameter server))'
    pairings ;;
  --hostile)
    hostile
    pairings ;;
  subset) refusals; pairings ;;
  *) echo "usage: $0 [--tests | --hostile | --pairings | --all]" >&2; exit 64 ;;
esac
