#!/usr/bin/env bash
# Runs a sweep as a real Slurm job array on this machine: a private one-node Slurm (slurmctld +
# slurmd + munge, configuration in a temp folder, nothing written to /etc), `aggsim sweep slurm`,
# `slurm/submit.sh` (the job array, then its merge job after it), waiting for both to end.
# Installs nothing: exits 77 with the reason when Slurm or munge is not installed (.ci/setup
# installs them) or when not root (SlurmUser=root).
# Usage: slurm_array.sh AGGSIM_BIN SWEEP_FILE OUT_DIR
set -uo pipefail
aggsim=$1 sweep=$2 out=$3

for cmd in slurmctld slurmd sbatch sinfo scontrol munged mungekey; do
  command -v "$cmd" >/dev/null || { echo "SKIPPED: '$cmd' not found (Debian packages slurm-wlm slurmctld slurmd slurm-client munge)"; exit 77; }
done
[ "$(id -u)" -eq 0 ] || { echo "SKIPPED: the private Slurm runs its daemons as root (SlurmUser=root)"; exit 77; }

D=$(mktemp -d /tmp/aggsim-slurm.XXXXXX)
mkdir -p "$D"/{munge,spool,state,log}
chmod 755 "$D" "$D/munge"
# Ports of our own, so a packaged Slurm (6817/6818) or another test run does not collide.
port=$((20000 + ($$ % 20000) * 2))
cat > "$D/slurm.conf" <<EOF2
ClusterName=aggsimtest
SlurmctldHost=localhost
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$D/munge/munge.socket
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool/slurmd-%n
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd-%n.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
MaxArraySize=1001
NodeName=localhost CPUs=2 RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF2
export SLURM_CONF=$D/slurm.conf

pids=()
cleanup() {
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill "${pids[i]}" 2>/dev/null; wait "${pids[i]}" 2>/dev/null; done
  rm -rf "$D"
}
trap cleanup EXIT
fail() {
  echo "FAILED: $*"
  for f in "$D"/log/*.log; do echo "--- $f"; tail -n 20 "$f"; done
  exit 1
}
wait_for() {  # wait_for SECONDS COMMAND...
  local until=$((SECONDS + $1)); shift
  until "$@" >/dev/null 2>&1; do [ $SECONDS -lt $until ] || return 1; sleep 0.1; done
}

mungekey -c -k "$D/munge/munge.key" || fail "mungekey"
munged -F --key-file="$D/munge/munge.key" --socket="$D/munge/munge.socket" --pid-file="$D/munge/munged.pid" \
  --log-file="$D/munge/munged.log" --seed-file="$D/munge/munged.seed" 2>"$D/log/munged.out" & pids+=($!)
wait_for 10 test -S "$D/munge/munge.socket" || fail "munged did not start"
slurmctld -D -f "$SLURM_CONF" >"$D/log/slurmctld.out" 2>&1 & pids+=($!)
slurmd -D -f "$SLURM_CONF" -N localhost >"$D/log/slurmd.out" 2>&1 & pids+=($!)
wait_for 30 sh -c 'sinfo -h -o %T | grep -qx idle' || fail "the node did not become idle"
echo "slurm up: $(sinfo -h -o '%P %D %T')"

"$aggsim" sweep slurm "$sweep" --out "$out" --chunk 2 --time 00:05:00 --mem 200M --max-running 2 \
  --sbatch=--comment=aggsim-test --merge-job || fail "aggsim sweep slurm"
script=$(ls "$out"/slurm/*.sbatch | grep -v -- '-merge.sbatch$') || fail "no sbatch script written"
grep '^#SBATCH' "$script"
start=$SECONDS
# submit.sh submits the array and the merge job (afterany); wait until both have left the queue.
"$out/slurm/submit.sh" || fail "submit.sh"
wait_for 180 sh -c '[ -z "$(squeue -h -o %i)" ]' || fail "the jobs did not complete: $(squeue -h)"
echo "job array and merge job completed in $((SECONDS - start)) s"
echo "--- merge job log"; cat "$out"/slurm/logs/merge_*.out
[ -f "$out/results.csv" ] || fail "the merge job wrote no results.csv"
