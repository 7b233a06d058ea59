#!/usr/bin/env bash
# Opening and indexing the full-size SD1 fixture (2.1 GB): should take well under a
# second and a few tens of MB of RSS. Prints JSON.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/fixture.sh"
model=$(make_fixture sd1_mc320 2)
"$build_dir/ggdiff-bench" --index-only "$model"
