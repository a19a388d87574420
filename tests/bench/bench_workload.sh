#!/usr/bin/env bash
# Wall time per simulated step and peak RSS of the MLP proxy (about 10^4 parameters per rank)
# trained with ring and hierarchical all-reduce at 256, 1,024 and
# 4,096 ranks, on a non-blocking cluster of 8-GPU nodes (100 Gb/s NIC per node, 300 GB/s inside a
# node) with ResNet-50's layer table setting bytes and compute.
#   tests/bench/bench_workload.sh [build/aggsim] [ranks...]
# Environment: STEPS (2), GRANULARITY (model), GPUS per node (8), ALGORITHMS ("ring_allreduce
# hierarchical_allreduce").
# Aggregation is by model (one all-reduce of the whole gradient per step): a ring over p ranks is
# 2p(p-1) messages, so 4,096 ranks are 33.5 M messages per step and dominate the wall time; by-layer
# buckets multiply that by the bucket count (GRANULARITY=layer). Prints a Markdown table; each
# point is one process; CPU seconds and peak RSS from GNU time (wall time depends on machine load).
set -euo pipefail
cd "$(dirname "$0")/../.."
AGGSIM=${1:-build/aggsim}
shift || true
RANKS=${*:-256 1024 4096}
STEPS=${STEPS:-2}
GRANULARITY=${GRANULARITY:-model}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

GPUS=${GPUS:-8}
algorithms=${ALGORITHMS:-ring_allreduce hierarchical_allreduce}

echo "| algorithm | ranks | steps | wall s | CPU s | CPU s / step | peak RSS MB | simulated step s |"
echo "|---|---|---|---|---|---|---|---|"
for alg in $algorithms; do
  for p in $RANKS; do
    cat >"$TMP/s.yaml" <<YAML
name: bench_workload
seed: 1
ranks: $p
steps: $STEPS
platform: {topology: cluster, hosts: $p, gpus_per_node: $GPUS, bandwidth: 100Gbps, latency: 1us, speed: 100Tf}
network: lv08
model: {layers: $PWD/scenarios/models/resnet50.yaml, batch: 32}
algorithm: {name: $alg, granularity: $GRANULARITY}
workload: {problem: mlp, dim: 64, hidden: 128, classes: 10, batch: 32, lr: 0.05, momentum: 0.9, eval_every: $STEPS}
YAML
    /usr/bin/time -f "%e %U %S %M" -o "$TMP/time" "$AGGSIM" run "$TMP/s.yaml" --out "$TMP/out" -q --force
    read -r wall user sys rss_kb <"$TMP/time"
    step=$(python3 -c "import json; print('%.4g' % json.load(open('$TMP/out/summary.json'))['mean_step_time_s'])")
    awk -v a="$alg" -v p="$p" -v s="$STEPS" -v w="$wall" -v u="$user" -v y="$sys" -v r="$rss_kb" -v t="$step" \
      'BEGIN { c = u + y; printf "| %s | %d | %d | %.1f | %.1f | %.2f | %.0f | %s |\n", a, p, s, w, c, c / s, r / 1024, t }'
  done
done
