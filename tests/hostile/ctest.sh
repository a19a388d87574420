#!/usr/bin/env bash
# The bounded hostile-corpus test ctest runs: N fresh cases of every family (fixed seed), fed to
# aggsim. The full corpus runs outside the suite (tests/fuzz/README.md, results in results/).
#   tests/hostile/ctest.sh WORK_DIR AGGSIM_BIN N
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$1"
/usr/bin/python3 "$here/generate.py" "$1" --per-family "$3" --seed 7
/usr/bin/python3 "$here/run.py" "$1" --aggsim "$2" --jobs 2 --timeout 30
rm -rf "$1"
