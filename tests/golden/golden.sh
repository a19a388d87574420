#!/bin/bash
# Golden outputs of the shipped scenarios (tests/data/golden/cases.txt): every output file of each
# case, as written by the aggsim that recorded them. A refactoring must leave them byte-identical.
#   tests/golden/golden.sh record AGGSIM_BIN [CASE_REGEX]   # (re)writes tests/data/golden/<case>/
#   tests/golden/golden.sh check AGGSIM_BIN [CASE_REGEX]    # compares, prints every difference
# Runs from the source folder, so the scenarios' relative paths resolve as in the recording.
set -u
mode=${1:?record or check}
bin=$(realpath "${2:?path to aggsim}")
filter=${3:-.}
src=$(cd "$(dirname "$0")/../.." && pwd)
golden="$src/tests/data/golden"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$src" || exit 1

failed=0
while IFS='|' read -r name scenario sets; do
  name=$(echo "$name" | sed "s/^ *//; s/ *$//")
  scenario=$(echo "$scenario" | sed "s/^ *//; s/ *$//")
  [[ -z "$name" || "$name" == \#* ]] && continue
  [[ "$name" =~ $filter ]] || continue
  args=()
  IFS=';' read -ra overrides <<<"$sets"
  for o in "${overrides[@]}"; do
    o=$(echo "$o" | sed 's/^ *//; s/ *$//')
    [[ -n "$o" ]] && args+=(--set "$o")
  done
  out="$work/$name"
  if [[ "$name" == sweep_* ]]; then
    "$bin" sweep expand "$scenario" --out "$out" "${args[@]}" >"$work/$name.log" 2>&1
  else
    "$bin" run "$scenario" --out "$out" -q "${args[@]}" >"$work/$name.log" 2>&1
  fi
  status=$?
  if [[ $status -ne 0 ]]; then
    echo "FAIL $name: aggsim exited with $status:"
    cat "$work/$name.log"
    failed=1
    continue
  fi
  rm -f "$out"/.aggsim* 2>/dev/null  # markers a run folder may carry are not outputs
  if [[ "$mode" == record ]]; then
    rm -rf "${golden:?}/$name"
    cp -r "$out" "$golden/$name"
    echo "recorded $name: $(cd "$out" && find . -type f | sort | tr '\n' ' ')"
  elif diff -r "$golden/$name" "$out" >"$work/$name.diff"; then
    echo "ok $name"
  else
    echo "FAIL $name: outputs differ from tests/data/golden/$name:"
    head -40 "$work/$name.diff"
    failed=1
  fi
done <"$golden/cases.txt"
exit $failed
