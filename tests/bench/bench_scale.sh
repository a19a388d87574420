#!/usr/bin/env bash
# CPU seconds (user + system) and peak RSS of one aggregation step, math off, network lv08, for
# the algorithms that matter at scale, at sizes that split evenly (100 MiB) and unevenly (10^8
# bytes) over the ranks. Ring, halving-doubling, double binary tree and the parameter server run
# on a non-blocking cluster of single-GPU hosts (10 Gb/s, 1 us), beside the bare SimGrid ring
# (tests/bench/bare_ring.cpp) on the same platform file; hierarchical all-reduce and gossipgrad run
# on 8-GPU nodes (100 Gb/s NIC per node). Reductions are free (reduce_speed: 0), as in the bare
# program. Not run by ctest. One run at a time; prints Markdown.
#   tests/bench/bench_scale.sh [BUILD_DIR] > table.md
# Environment: RANKS ("1024"), SIZES ("100MiB 100MB"), ALGORITHMS (subset, in order), TIMEOUT
# (seconds per run, 1800), NODE_FLOWS (hierarchical_allreduce's node_flows: separate | merged;
# unset: the default, separate).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
aggsim=$(realpath "$build/aggsim")
bare=$(realpath "$build/bench_bare_ring")
ranks=${RANKS:-1024}
sizes=${SIZES:-"100MiB 100MB"}
timeout=${TIMEOUT:-1800}
algorithms=${ALGORITHMS:-"bare_ring ring_allreduce hierarchical_allreduce halving_doubling_allreduce double_binary_tree_allreduce gossipgrad parameter_server"}
work=$(mktemp -d /tmp/aggsim-scale.XXXXXX)
trap 'rm -rf "$work"' EXIT

bytes_of() { case $1 in 100MiB) echo 104857600 ;; 100MB) echo 100000000 ;; 1MiB) echo 1048576 ;; 1MB) echo 1000000 ;; *) echo "$1" ;; esac; }

# Prints "cpu_s peak_MB" of the command, or "timeout -" / "failed -".
measure() {
  if timeout "$timeout" /usr/bin/time -f '%U %S %M' -o "$work/time" "$@" >"$work/out" 2>"$work/err"; then
    awk '{ printf "%.2f %.0f\n", $1 + $2, $3 / 1024 }' "$work/time"
  elif [ $? -eq 124 ]; then echo "timeout -"; else echo "failed -"; fi
}

echo "| algorithm | ranks | size | CPU s | peak RSS MB | simulated s | messages |"
echo "|---|---|---|---|---|---|---|"
for p in $ranks; do
  xml=$work/cluster_$p.xml
  cat >"$xml" <<XML
<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <cluster id="bench" prefix="host-" radical="0-$((p - 1))" suffix="" speed="100Gf" bw="10Gbps" lat="1us" sharing_policy="SPLITDUPLEX"/>
</platform>
XML
  for alg in $algorithms; do
    for size in $sizes; do
      if [ "$alg" = bare_ring ]; then
        # Plain LV08 plus the precision the lv08 preset sets on this platform (8 B at 10 Gb/s).
        read -r cpu rss < <(measure "$bare" "$xml" "$p" "$(bytes_of "$size")" --cfg=network/model:LV08 \
          --cfg=surf/precision:6.4e-9 --cfg=contexts/factory:raw --log=xbt_cfg.thres:warning)
        read -r sim messages <"$work/out" || true
      else
        case $alg in
          hierarchical_allreduce | gossipgrad)
            platform="{topology: cluster, hosts: $p, gpus_per_node: 8, bandwidth: 100Gbps, latency: 1us}" ;;
          *) platform="{file: $xml}" ;;
        esac
        algorithm="{name: $alg}"
        if [ "$alg" = hierarchical_allreduce ] && [ -n "${NODE_FLOWS:-}" ]; then
          algorithm="{name: $alg, node_flows: $NODE_FLOWS}"
        fi
        cat >"$work/s.yaml" <<YAML
name: scale
seed: 1
ranks: $p
steps: 1
platform: $platform
network: lv08
model: {size: $size, math: off}
algorithm: $algorithm
compute: {reduce_speed: 0}
YAML
        rm -rf "$work/run"
        read -r cpu rss < <(measure "$aggsim" run "$work/s.yaml" --out "$work/run" -q)
        sim=- messages=-
        if [ -f "$work/run/summary.json" ]; then
          read -r sim messages < <(python3 -c "import json; s = json.load(open('$work/run/summary.json')); print('%.9g' % s['sim_time_s'], s['messages'])")
        fi
      fi
      echo "| $alg | $p | $size | $cpu | $rss | $sim | $messages |"
    done
  done
done
