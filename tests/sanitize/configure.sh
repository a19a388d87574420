#!/usr/bin/env bash
# Configures the shared clang ASan/UBSan tree (fuzz targets included) that tests/fuzz/run.sh and
# tests/sanitize/run.sh use, the same way for both (a different configuration would rebuild it),
# and builds TARGETS in it. Line tables only: stack traces keep file:line, the build is cheaper.
# Unoptimised (-O0, the usual setting for sanitizer builds; reports are as precise or more): clang
# compiled a unit instrumented at -O2 in 88 CPU s and at -O0 in 50 s, and the runs it serves are small.
# A unity build (8 files per compiled unit): the headers every file includes are parsed, and their
# inline code instrumented and optimised, once per unit instead of once per file, which made this
# build the longest part of the test suite. It changes which files compile together, not the code.
#   tests/sanitize/configure.sh BUILD_DIR [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=$1
shift
cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O0 -gline-tables-only -DNDEBUG" \
  -DAGGSIM_FUZZ=ON -DAGGSIM_SANITIZE=ON \
  -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=8 >/dev/null
[ $# -eq 0 ] || cmake --build "$build" --target "$@"
