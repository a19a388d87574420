#!/usr/bin/env bash
# Configures the shared clang ASan/UBSan tree (fuzz targets included) that tests/fuzz/run.sh and
# tests/sanitize/run.sh use, the same way for both (a different configuration would rebuild it),
# and builds TARGETS in it. No debug information: sanitizer reports name each frame's function (from
# the symbol table), and the tree compiles a fifth faster than with line tables; AGGSIM_SANITIZE_LINES=1
# adds them (-gline-tables-only: file:line in every frame; the tree is then rebuilt).
# Unoptimised (-O0, the usual setting for sanitizer builds; reports are as precise or more): clang
# compiled a unit instrumented at -O2 in 88 CPU s and at -O0 in 50 s, and the runs it serves are small.
# A unity build: the headers every file includes are parsed, and their inline code instrumented, once
# per unit instead of once per file, which made this build the longest part of the test suite. The
# library goes in units of 32 files (306 CPU s here against 346 in units of 8, the optimised build's
# size: larger units pay off only unoptimised, CMakeLists.txt). It changes which files compile
# together, not the code.
#   tests/sanitize/configure.sh BUILD_DIR [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=$1
shift
debug=""
[ "${AGGSIM_SANITIZE_LINES:-0}" = 1 ] && debug="-gline-tables-only"
cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O0 $debug -DNDEBUG" \
  -DAGGSIM_FUZZ=ON -DAGGSIM_SANITIZE=ON \
  -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=8 -DAGGSIM_UNITY_BATCH=32 >/dev/null
[ $# -eq 0 ] || cmake --build "$build" --target "$@"
