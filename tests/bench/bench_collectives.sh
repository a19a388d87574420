#!/usr/bin/env bash
# Wall time and peak memory of one all-reduce step for every algorithm at 1,024 and 4,096 ranks
# (math off, LV08), side by side with SimGrid's SMPI MPI_Allreduce of the same schedule on the same
# platform XML. Not run by ctest: it takes minutes. Prints a Markdown table on stdout.
#
#   tests/bench/bench_collectives.sh [BUILD_DIR] > table.md
#
# Environment: RANKS ("1024 4096"), SIZE (bytes per rank, 1048576), SMPI_TIMEOUT (seconds per
# smpirun, 300; once SMPI times out for an algorithm, larger p are skipped for it), AGGSIM_TIMEOUT
# (seconds per aggsim run, 900), ALGORITHMS (a space-separated subset, run in that order).
# The platform: p hosts on one switch, a private 10 Gb/s, 1 us full-duplex link each.
set -euo pipefail

build=${1:-build}
ranks=${RANKS:-"1024 4096"}
size=${SIZE:-1048576}
smpi_timeout=${SMPI_TIMEOUT:-300}
aggsim_timeout=${AGGSIM_TIMEOUT:-900}
aggsim=$(realpath "$build/aggsim")
peer=$(realpath "$build/tests/algorithms/smpi/allreduce_time" 2>/dev/null || true)
work=$(mktemp -d /tmp/aggsim-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT

# aggsim algorithm -> SMPI configuration of the same schedule ("-": none in SMPI).
algorithms=(
  "ring_allreduce|--cfg=smpi/allreduce:lr"
  "halving_doubling_allreduce|--cfg=smpi/allreduce:rab_rdb"
  "recursive_doubling_allreduce|--cfg=smpi/allreduce:rdb"
  "tree_allreduce|--cfg=smpi/allreduce:redbcast --cfg=smpi/reduce:binomial --cfg=smpi/bcast:binomial_tree"
  "double_binary_tree_allreduce|-"
  "hierarchical_allreduce|-"
  "torus2d_allreduce|-"
  "parameter_server|-"
  "allgather|-"
)

if [ -n "${ALGORITHMS:-}" ]; then
  chosen=()
  for want in $ALGORITHMS; do
    for entry in "${algorithms[@]}"; do [ "${entry%%|*}" = "$want" ] && chosen+=("$entry"); done
  done
  algorithms=("${chosen[@]}")
fi

# Runs a command under /usr/bin/time; prints "wall_s cpu_s peak_MB" (cpu = user + system: on a
# shared machine it is the fairer figure), or "timeout - -" / "failed - -".
measure() {
  local seconds=$1 log=$2
  shift 2
  if timeout "$seconds" /usr/bin/time -f "%e %U %S %M" -o "$log.time" "$@" >"$log.out" 2>"$log.err"; then
    awk '{printf "%.2f %.2f %.0f", $1, $2 + $3, $4 / 1024}' "$log.time"
  elif [ $? -eq 124 ]; then echo "timeout - -"; else echo "failed - -"; fi
}

echo "| algorithm | p | aggsim wall (s) | aggsim CPU (s) | aggsim peak (MB) | aggsim simulated (s) | SMPI | SMPI wall (s) | SMPI CPU (s) | SMPI peak (MB) | SMPI simulated (s) |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
declare -A smpi_gave_up
for p in $ranks; do
  xml=$work/cluster_$p.xml
  cat >"$xml" <<XML
<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <cluster id="bench" prefix="host-" radical="0-$((p - 1))" suffix="" speed="100Gf" bw="10Gbps" lat="1us"
           sharing_policy="SPLITDUPLEX"/>
</platform>
XML
  seq 0 $((p - 1)) | sed 's/^/host-/' >"$work/hosts_$p"
  for entry in "${algorithms[@]}"; do
    name=${entry%%|*}
    smpi_cfg=${entry#*|}
    cat >"$work/s.yaml" <<YAML
ranks: $p
steps: 1
platform: {file: $xml}
network: lv08
model: {size: ${size}B, math: off}
algorithm: {name: $name, op: sum}
YAML
    read -r a_wall a_cpu a_mem <<<"$(measure "$aggsim_timeout" "$work/a" "$aggsim" run "$work/s.yaml" --out "$work/out" -q)"
    sim=$( [ -f "$work/out/steps.csv" ] && tail -1 "$work/out/steps.csv" | cut -d, -f2 | xargs printf "%.6e" || echo "-")
    rm -rf "$work/out"
    s_name="-" s_wall="-" s_cpu="-" s_mem="-" s_sim="-"
    if [ "$smpi_cfg" != "-" ] && [ -n "$peer" ]; then
      s_name=${smpi_cfg#--cfg=smpi/allreduce:}
      s_name=${s_name%% *}
      if [ -n "${smpi_gave_up[$name]:-}" ]; then
        s_wall="skipped"
      else
        # shellcheck disable=SC2086
        read -r s_wall s_cpu s_mem <<<"$(measure "$smpi_timeout" "$work/s" smpirun -np "$p" -platform "$xml" -hostfile "$work/hosts_$p" \
          --cfg=contexts/factory:raw --cfg=network/model:LV08 --cfg=smpi/simulate-computation:no \
          --cfg=smpi/wtime:0 --cfg=smpi/shared-malloc:local --log=root.thres:error $smpi_cfg "$peer" "$size")"
        if [ "$s_mem" = "-" ]; then smpi_gave_up[$name]=1; else s_sim=$(tail -1 "$work/s.out"); fi
      fi
    fi
    echo "| $name | $p | $a_wall | $a_cpu | $a_mem | $sim | $s_name | $s_wall | $s_cpu | $s_mem | $s_sim |"
  done
done
