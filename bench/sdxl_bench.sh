#!/usr/bin/env bash
# Times a generation with the SDXL fixture (narrow UNet, full-size CLIP-L, OpenCLIP bigG and
# VAE; 1.9 GB, seed 31): 256x256, 4 steps, euler. Prints ggdiff-bench's JSON (load, text,
# per-step, VAE decode, peak RSS). Extra flags go to ggdiff-bench (e.g. -t 2, --type f16).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/fixture.sh"
model=$(make_fixture sdxl_mc32 31)
"$build_dir/ggdiff-bench" -m "$model" -p "a photograph of an astronaut riding a horse" \
  -W 256 -H 256 --steps 4 --sampling-method euler --cfg-scale 5 -s 42 "$@"
