#!/usr/bin/env bash
# The scale target's training study: ResNet-50's layer table on 8-GPU nodes (100 Gb/s NIC per node,
# 2 us), DDP buckets of 25 MB aggregated by hierarchical all-reduce, math on with the MLP proxy
# (9,610 parameters per rank), for STEPS steps at RANKS ranks. Prints one Markdown row: CPU seconds
# (user + system) and peak RSS of the whole process, the simulated time, the steps replayed and the
# messages. Not run by ctest.
#   tests/bench/bench_resnet_study.sh [BUILD_DIR]
# Environment: RANKS (4096), STEPS (100), NODE_FLOWS (hierarchical_allreduce's node_flows; auto),
# REPLAY (true: engine.replay).
set -euo pipefail
cd "$(dirname "$0")/../.."
aggsim=$(realpath "${1:-build}/aggsim")
ranks=${RANKS:-4096}
steps=${STEPS:-100}
work=$(mktemp -d /tmp/aggsim-study.XXXXXX)
trap 'rm -rf "$work"' EXIT
cat >"$work/s.yaml" <<YAML
name: resnet50_study
seed: 1
ranks: $ranks
steps: $steps
platform: {topology: cluster, nodes: $((ranks / 8)), gpus_per_node: 8, bandwidth: 100Gbps, latency: 2us, speed: 100Tf}
network: lv08
model: {layers: $PWD/scenarios/models/resnet50.yaml, batch: 32}
algorithm: {name: hierarchical_allreduce, granularity: layer, bucket: 25MB, node_flows: ${NODE_FLOWS:-auto}}
workload: {problem: mlp, dim: 64, hidden: 128, classes: 10, batch: 32, lr: 0.05}
engine: {replay: ${REPLAY:-true}}
YAML
/usr/bin/time -f '%U %S %M' -o "$work/time" "$aggsim" run "$work/s.yaml" --out "$work/run" -q
read -r user sys rss_kb <"$work/time"
echo "| ranks | steps | CPU s | peak RSS MB | simulated s | steps replayed | messages |"
echo "|---|---|---|---|---|---|---|"
python3 - "$work/run/summary.json" "$ranks" "$steps" "$user" "$sys" "$rss_kb" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
ranks, steps, user, sys_, rss = sys.argv[2:7]
print(f"| {ranks} | {steps} | {float(user) + float(sys_):.2f} | {int(rss) / 1024:.0f} | {s['sim_time_s']:.9g} "
      f"| {s['steps_replayed']} | {s['messages']} |")
PY
