#!/usr/bin/env bash
# Configures the shared clang ASan/UBSan tree (fuzz targets included) that tests/fuzz/run.sh and
# tests/sanitize/run.sh use, the same way for both (a different configuration would rebuild it),
# and builds TARGETS in it. Line tables only: stack traces keep file:line, the build is cheaper.
#   tests/sanitize/configure.sh BUILD_DIR [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=$1
shift
cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -gline-tables-only -DNDEBUG" \
  -DAGGSIM_FUZZ=ON -DAGGSIM_SANITIZE=ON >/dev/null
[ $# -eq 0 ] || cmake --build "$build" --target "$@"
