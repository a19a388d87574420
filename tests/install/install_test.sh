#!/bin/bash
# `cmake --install` into a temporary prefix, then the installed aggsim run from a folder holding
# nothing: it finds the shipped scenarios, platforms and layer tables in <prefix>/share/aggsim (not in
# the source tree it was built from), by path and by name; AGGSIM_DATA overrides that folder.
#   tests/install/install_test.sh BUILD_DIR
set -u
build=$(realpath "${1:?build folder}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cmake --install "$build" --prefix "$work/prefix" >"$work/install.log" 2>&1 || { cat "$work/install.log"; fail "cmake --install"; }
bin="$work/prefix/bin/aggsim"
data="$work/prefix/share/aggsim"
[[ -x "$bin" ]] || fail "no $bin"
for f in platforms/cluster_16.xml scenarios/default.yaml scenarios/models/resnet50.yaml \
         scenarios/sweeps/ring_sizes.yaml analysis/report.py analysis/plots.py; do
  [[ -f "$data/$f" ]] || fail "not installed: share/aggsim/$f"
done

mkdir "$work/elsewhere" && cd "$work/elsewhere" || exit 1
# The repository's relative paths, and bare names, resolve in the installed data.
"$bin" run scenarios/default.yaml --set steps=1 --set ranks=4 -q --out by_path || fail "run scenarios/default.yaml"
grep -q "\"platform\": \"$data/platforms/cluster_16.xml (16 hosts)\"" by_path/summary.json \
  || fail "the platform did not come from the installed data: $(grep platform by_path/summary.json)"
"$bin" run default --set steps=1 --set ranks=4 --set model.layers=resnet50 --set model.math=off -q --out by_name \
  2>"$work/notes" || fail "run default with model.layers=resnet50"
grep -q "layers: $data/scenarios/models/resnet50.yaml" by_name/resolved.yaml || fail "resnet50 not found by name"
grep -q "model.size .* dropped" "$work/notes" || fail "no note that model.size was dropped: $(cat "$work/notes")"
"$bin" validate ring_sizes >/dev/null 2>&1 && fail "a sweep file passed as a scenario"
"$bin" sweep expand ring_sizes --out sweep >/dev/null || fail "sweep expand ring_sizes by name"

# AGGSIM_DATA wins over the installed folder.
mkdir -p mine/platforms mine/scenarios
cp "$data/platforms/cluster_64.xml" mine/platforms/cluster_16.xml
cp "$data/scenarios/default.yaml" mine/scenarios/default.yaml
out=$(AGGSIM_DATA="$PWD/mine" "$bin" validate default) || fail "AGGSIM_DATA validate"
[[ "$out" == *"mine/platforms/cluster_16.xml (64 hosts)"* ]] || fail "AGGSIM_DATA not used: $out"
out=$(AGGSIM_DATA="$PWD/nothing" "$bin" validate default 2>&1); status=$?
[[ $status -eq 2 && "$out" == *"AGGSIM_DATA=$PWD/nothing: not a folder"* ]] || fail "bad AGGSIM_DATA: $status $out"
# A name that is nowhere: every place looked, and the shipped names.
out=$("$bin" validate default --set model.layers=resnet5 2>&1); status=$?
[[ $status -eq 2 && "$out" == *"did you mean 'resnet50'"* && "$out" == *"shipped: bert_base"* ]] \
  || fail "unknown layer table: $status $out"
echo "ok: installed to $work/prefix, found by path and by name, AGGSIM_DATA honoured"
