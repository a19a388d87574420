#!/usr/bin/env bash
# CPU seconds (user + system) and peak RSS of the two large-model studies: GPT-2 small with fsdp's
# full sharding on 4,096 GPUs (scenarios/bench_fsdp_4k.yaml; aimed at: 100 steps within 5 CPU
# minutes and 2 GB) and with parallel: {tensor: 8, pipeline: 4} on 16,384 GPUs
# (scenarios/bench_layout_16k.yaml; aimed at: 100 steps within 10 CPU minutes). Appends one row a
# run to tests/bench/results/layout_study.csv. Not run by ctest; run it alone (it is heavy).
#   tests/bench/bench_layout.sh [BUILD_DIR]
# Environment: STEPS ("100"; several values run each, e.g. "1 5" to separate set-up from the
# per-step cost), STUDIES ("fsdp_4k layout_16k"), MACHINE (a description for the CSV).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
aggsim=$(realpath "$build/aggsim")
steps_list=${STEPS:-100}
studies=${STUDIES:-"fsdp_4k layout_16k"}
machine=${MACHINE:-"2-core development machine, shared"}
results=tests/bench/results/layout_study.csv
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
work=$(mktemp -d /tmp/aggsim-layout.XXXXXX)
trap 'rm -rf "$work"' EXIT
[ -f "$results" ] || echo "study,ranks,steps,cpu_s,peak_rss_mb,simulated_s,aimed_cpu_s,aimed_rss_mb,machine,date,commit,command" >"$results"

for study in $studies; do
  case $study in
    fsdp_4k) ranks=4096; aimed_cpu=300; aimed_rss=2048 ;;
    layout_16k) ranks=16384; aimed_cpu=600; aimed_rss="" ;;
    *) echo "bench_layout.sh: unknown study $study" >&2; exit 2 ;;
  esac
  for steps in $steps_list; do
    /usr/bin/time -f '%U %S %M' -o "$work/time" \
      "$aggsim" run "scenarios/bench_$study.yaml" --set steps="$steps" --out "$work/run" -q --force
    sim=$(sed -n 's/.*"sim_time_s": \([0-9.e+-]*\).*/\1/p' "$work/run/summary.json")
    read -r user sys rss <"$work/time"
    row=$(awk -v u="$user" -v s="$sys" -v r="$rss" 'BEGIN { printf "%.2f,%.0f", u + s, r / 1024 }')
    echo "$study,$ranks,$steps,$row,$sim,$aimed_cpu,$aimed_rss,\"$machine\",$(date -u +%Y-%m-%d),$commit,\"STEPS=$steps STUDIES=$study tests/bench/bench_layout.sh $build\"" | tee -a "$results"
  done
done
