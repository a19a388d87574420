#!/usr/bin/env bash
# MSCCL programs: (1) how long `aggsim validate` takes to read, check and verify ring programs of
# about 16k, 32k and 64k steps (64 GPUs, 2/4/8 channels; loading is meant to be linear in the
# steps), and (2) the step times of MSCCL rings against ring_allreduce and nccl_allreduce's ring on
# the same platform (8 single-GPU nodes, 100 Gb/s, 1 us; reductions free), the differences the
# README states. Not run by ctest. Writes two CSV files, each opening with the machine, date,
# commit and command.
#
#   tests/bench/bench_msccl.sh [BUILD_DIR] [OUT_DIR]     (default: build, tests/data/msccl)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
out=${2:-tests/data/msccl}
aggsim=$(realpath "$build/aggsim")
generate=algorithms/msccl/programs/generate.py
work=$(mktemp -d /tmp/aggsim-msccl-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT

header() {
  echo "# machine: $(uname -m), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
  echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "# commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . 2>/dev/null || echo ' (with local changes)')"
  echo "# command: tests/bench/bench_msccl.sh $*"
}

# (1) Loading.
{
  header "$@"
  echo "gpus,channels,steps,file_bytes,validate_s_best_of_3,validate_us_per_step"
  for channels in 2 4 8; do
    program="$work/ring_64_${channels}.xml"
    /usr/bin/python3 "$generate" ring_allreduce --gpus 64 --channels "$channels" --out "$program"
    steps=$(grep -c '<step ' "$program")
    cat >"$work/load.yaml" <<YAML
ranks: 64
platform: {topology: cluster, nodes: 64}
model: {size: 64MiB}
algorithm: {name: msccl, program: $program}
YAML
    best=""
    for _ in 1 2 3; do
      start=$(date +%s.%N)
      "$aggsim" validate "$work/load.yaml" >/dev/null
      t=$(echo "$(date +%s.%N) - $start" | bc -l)
      if [ -z "$best" ] || [ "$(echo "$t < $best" | bc -l)" = 1 ]; then best=$t; fi
    done
    printf '64,%s,%s,%s,%.4f,%.3f\n' "$channels" "$steps" "$(stat -c %s "$program")" "$best" \
      "$(echo "$best * 1000000 / $steps" | bc -l)"
  done
} >"$out/load_benchmark.csv"

# (2) Step times against the built-in collectives.
platform="{topology: cluster, nodes: 8, bandwidth: 100Gbps, latency: 1us}"
step_time() {  # algorithm, size
  cat >"$work/t.yaml" <<YAML
ranks: 8
steps: 1
platform: $platform
model: {size: $2, math: off}
compute: {reduce_speed: 0}
algorithm: $1
YAML
  "$aggsim" run "$work/t.yaml" --out "$work/t" --force -q >/dev/null
  /usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['mean_step_time_s'])" "$work/t/summary.json"
}
{
  header "$@"
  echo "# platform: $platform; MSCCL ring order: chunk c starts at rank c + 1 (NCCL's), except against ring_allreduce (rank c)"
  echo "size,protocol,channels,ring_allreduce_s,msccl_rank_c_s,vs_ring_allreduce,nccl_flow_s,nccl_chunk_s,msccl_rank_c_plus_1_s,vs_nccl_flow,vs_nccl_chunk"
  for size in 1MiB 64MiB 256MiB; do
    for proto in Simple LL128 LL; do
      key=$(echo "$proto" | tr 'A-Z' 'a-z')
      for channels in 1 2; do
        /usr/bin/python3 "$generate" ring_allreduce --gpus 8 --channels "$channels" --first 1 --proto "$proto" --out "$work/n.xml"
        /usr/bin/python3 "$generate" ring_allreduce --gpus 8 --channels "$channels" --proto "$proto" --out "$work/r.xml"
        m=$(step_time "{name: msccl, program: $work/n.xml}" "$size")
        mr=$(step_time "{name: msccl, program: $work/r.xml}" "$size")
        r=$(step_time "{name: ring_allreduce}" "$size")
        nf=$(step_time "{name: nccl_allreduce, nccl_algorithm: ring, protocol: $key, channels: $channels}" "$size")
        nc=$(step_time "{name: nccl_allreduce, nccl_algorithm: ring, protocol: $key, channels: $channels, movement: chunk}" "$size")
        /usr/bin/python3 -c "
m, mr, r, nf, nc = $m, $mr, $r, $nf, $nc
print(f'$size,$proto,$channels,{r:.6g},{mr:.6g},{mr / r - 1:+.4f},{nf:.6g},{nc:.6g},{m:.6g},{m / nf - 1:+.4f},{m / nc - 1:+.4f}')"
      done
    done
  done
} >"$out/comparison.csv"
echo "wrote $out/load_benchmark.csv and $out/comparison.csv"
