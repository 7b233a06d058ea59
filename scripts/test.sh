#!/usr/bin/env bash
# Builds (if needed) and runs every test suite under ctest.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${BUILD_DIR:-$here/build}"
if [ ! -f "$build_dir/CMakeCache.txt" ]; then
  cmake -S "$here" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release
fi
cmake --build "$build_dir" -j "$(nproc)"
# The fixtures take about 10 GB; tests remove their own scratch folders when they pass.
echo "test: disk free before the run: $(df -h --output=avail "$build_dir" | tail -1 | tr -d ' ')"
status=0
# ctest runs one test per core; each ggdiff process then takes one thread (GGDIFF_THREADS), since
# ggml's CPU threads spin while they wait and oversubscribed cores lose about a quarter of the run.
GGDIFF_THREADS="${GGDIFF_THREADS:-1}" \
  ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)" --timeout 900 || status=$?
echo "test: disk free after the run: $(df -h --output=avail "$build_dir" | tail -1 | tr -d ' ')"
exit "$status"
