#!/usr/bin/env bash
# Times a generation with the full-size SD1.5-layout fixture (2.1 GB, seed 2):
# 256x256, 4 steps, euler. Prints ggdiff-bench's JSON (load, text, per-step, VAE
# decode, peak RSS). Extra flags go to ggdiff-bench (e.g. -t 2, --type q8_0).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/fixture.sh"
model=$(make_fixture sd1_mc320 2)
"$build_dir/ggdiff-bench" -m "$model" --tokenizer "$shared/data/clip/merges.txt" \
  -p "a photograph of an astronaut riding a horse" -W 256 -H 256 --steps 4 \
  --sampling-method euler -s 2 "$@"
