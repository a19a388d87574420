#!/bin/sh
# Benchmark of one 16,384-rank GossipGraD step (math off) pinned to one core, plus a 5-step run of
# the same scenario so the per-message rate is not hidden by set-up (platform, actors). Reports
# wall time and CPU time (user + sys): on a shared machine the wall time includes waiting for the core.
# Usage: tests/bench/bench_gossip.sh [path/to/aggsim]   (from the source tree; default build/aggsim)
set -eu
AGGSIM=${1:-build/aggsim}
SCENARIO=scenarios/bench_gossip_16k.yaml
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

run() {  # steps label
  /usr/bin/time -f "%e %U %S" -o "$OUT/time" taskset -c 0 "$AGGSIM" run "$SCENARIO" --set steps="$1" --out "$OUT/run" -q --force
  messages=$(sed -n 's/.*"messages": \([0-9]*\).*/\1/p' "$OUT/run/summary.json")
  sim=$(sed -n 's/.*"sim_time_s": \([0-9.e+-]*\).*/\1/p' "$OUT/run/summary.json")
  awk -v label="$2" -v m="$messages" -v sim="$sim" '{
    cpu = $2 + $3; printf "| %-22s | %8.2f | %7.2f | %8d | %10.0f | %10.0f | %9.4f |\n", label, $1, cpu, m, m / $1, m / cpu, sim }' "$OUT/time"
}

echo "| run                    | wall (s) | CPU (s) | messages | msg/s wall | msg/s CPU  | sim (s)   |"
echo "|------------------------|----------|---------|----------|------------|------------|-----------|"
run 1 "16,384 ranks, 1 step"
run 5 "16,384 ranks, 5 steps"
