#!/usr/bin/env bash
# CPU seconds (user + system, the least of REPEAT back-to-back runs) and peak RSS of nccl_allreduce
# at scale, appended as CSV rows (with machine, date, commit and the command) to
# tests/bench/results/nccl.csv; tests/bench/render.py turns them into the tables of
# algorithms/nccl/README.md. Not run by ctest; one run at a time.
#   tests/bench/bench_nccl.sh [BUILD_DIR]
# Cases (CASES, in order):
#   step:R   one 100 MiB all-reduce step (ring, Simple, flow level), math off, on a non-blocking
#            cluster of R single-GPU hosts (10 Gb/s, 1 us), the platform of bench_scale.sh
#   study:R  the ResNet-50 study of bench_resnet_study.sh (100 steps, DDP buckets, math on, replay)
#            with nccl_allreduce on R ranks of 8-GPU nodes
#   rails_step:N   one 100 MiB all-reduce step (NCCL's own choice, flow level), math off, on N
#                  DGX H100 nodes: 8 GPUs on an NVSwitch (450 GB/s per direction, NVLS), 8 NICs of
#                  400 Gb/s (rails), a non-blocking fat tree (rows go to OUT)
#   rails_study:N  the ResNet-50 study above on those N nodes (rows go to OUT)
#   system_study:N the ResNet-50 study above on N nodes of the named system dgx_h100
#                  (`platform: {system: dgx_h100, nodes: N}`, its own fat tree) under the network
#                  model a scenario of that system gets by default (NETWORK, `auto`: its InfiniBand
#                  links as latency + size/bandwidth; the other studies run lv08); rows go to OUT
# Environment: CASES ("step:4096 step:16384 study:4096 study:16384"), REPEAT (3), STEPS (100),
# OUT (tests/bench/results/nccl.csv; the rails cases: tests/bench/results/scale_65536.csv),
# NETWORK (system_study's network model: auto).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
aggsim=$(realpath "$build/aggsim")
cases=${CASES:-"step:4096 step:16384 study:4096 study:16384"}
repeat=${REPEAT:-3}
steps=${STEPS:-100}
work=$(mktemp -d /tmp/aggsim-nccl.XXXXXX)
trap 'rm -rf "$work"' EXIT

machine="$(nproc) x $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo), $(awk '/MemTotal/ {printf "%.0f GB", $2 / 1048576}' /proc/meminfo)"
commit=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- sim algorithms || echo "+changes")
date=$(date -u +%Y-%m-%d)
rails_platform() {
  echo "{topology: fat_tree, nodes: $1, gpus_per_node: 8, nvswitch: true, intra_bandwidth: 450GBps," \
    "nics_per_node: 8, nic_bandwidth: 400Gbps, bandwidth: 400Gbps, latency: 1us, speed: 100Tf}"
}
study_yaml() {  # ranks, platform, network model (lv08)
  cat <<YAML
name: resnet50_study
seed: 1
ranks: $1
steps: $steps
platform: $2
network: ${3:-lv08}
model: {layers: $PWD/scenarios/models/resnet50.yaml, batch: 32}
algorithm: {name: nccl_allreduce, granularity: layer, bucket: 25MB}
workload: {problem: mlp, dim: 64, hidden: 128, classes: 10, batch: 32, lr: 0.05}
engine: {replay: true}
YAML
}

for c in $cases; do
  kind=${c%%:*}
  ranks=${c#*:}
  case $kind in rails_* | system_*) out=${OUT:-tests/bench/results/scale_65536.csv} ;; *) out=${OUT:-tests/bench/results/nccl.csv} ;; esac
  [ -f "$out" ] || echo "case,ranks,cpu_s,peak_rss_mb,sim_time_s,messages,machine,date,commit,command" >"$out"
  env_used= label=$kind
  case $kind in
    step)
      cat >"$work/cluster.xml" <<XML
<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <cluster id="bench" prefix="host-" radical="0-$((ranks - 1))" suffix="" speed="100Gf" bw="10Gbps" lat="1us" sharing_policy="SPLITDUPLEX"/>
</platform>
XML
      cat >"$work/s.yaml" <<YAML
name: nccl_step
seed: 1
ranks: $ranks
steps: 1
platform: {file: $work/cluster.xml}
network: alpha_beta
model: {size: 100MiB, math: off}
algorithm: {name: nccl_allreduce, nccl_algorithm: ring, protocol: simple}
compute: {reduce_speed: 0}
YAML
      ;;
    study)
      study_yaml "$ranks" "{topology: cluster, nodes: $((ranks / 8)), gpus_per_node: 8, bandwidth: 100Gbps, latency: 2us, speed: 100Tf}" >"$work/s.yaml"
      ;;
    rails_step)
      nodes=$ranks ranks=$((nodes * 8))
      cat >"$work/s.yaml" <<YAML
name: nccl_rails_step
seed: 1
ranks: $ranks
steps: 1
platform: $(rails_platform "$nodes")
model: {size: 100MiB, math: off}
algorithm: {name: nccl_allreduce}
compute: {reduce_speed: 0}
YAML
      ;;
    rails_study)
      nodes=$ranks ranks=$((nodes * 8))
      study_yaml "$ranks" "$(rails_platform "$nodes")" >"$work/s.yaml"
      ;;
    system_study)
      nodes=$ranks ranks=$((nodes * 8))
      study_yaml "$ranks" "{system: dgx_h100, nodes: $nodes, speed: 100Tf}" "${NETWORK:-auto}" >"$work/s.yaml"
      env_used="NETWORK=${NETWORK:-auto} "
      [ "${NETWORK:-auto}" = auto ] || label="system_study (network ${NETWORK})"
      ;;
    *) echo "unknown case $c" >&2; exit 2 ;;
  esac
  best=
  for _ in $(seq "$repeat"); do
    rm -rf "$work/run"
    /usr/bin/time -f '%U %S %M' -o "$work/time" "$aggsim" run "$work/s.yaml" --out "$work/run" -q
    read -r user sys rss_kb <"$work/time"
    cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')
    if [ -z "$best" ] || awk -v a="$cpu" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$cpu best_rss=$rss_kb; fi
  done
  read -r sim messages < <(python3 -c "import json; s = json.load(open('$work/run/summary.json')); print('%.9g' % s['sim_time_s'], s['messages'])")
  echo "\"$label\",$ranks,$best,$((best_rss / 1024)),$sim,$messages,\"$machine\",$date,$commit,\"${env_used}CASES=$c REPEAT=$repeat STEPS=$steps tests/bench/bench_nccl.sh\"" | tee -a "$out"
done
