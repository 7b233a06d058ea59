#!/usr/bin/env bash
# The main job: generates an image with ggdiff from the SD1-layout fixture model
# (deterministic random weights made by ../shared/tools/make_fixture.py), so it
# works on a fresh machine without downloading a checkpoint.
# Usage: scripts/demo.sh [MODEL.safetensors] [extra ggdiff flags...]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${BUILD_DIR:-$here/build}"
model="${1:-}"
[ $# -gt 0 ] && shift
if [ -z "$model" ]; then
  shared="$here/../shared"
  model="$build_dir/fixtures/sd1_mc32.safetensors"
  if [ ! -f "$model" ]; then
    mkdir -p "$build_dir/fixtures"
    echo "demo: generating the SD1 fixture model (about 500 MB, once)"
    "$shared/tools/make_fixture.py" "$shared/fixtures/sd1_mc32.tensors" "$model" --seed 1
  fi
  set -- --tokenizer "$shared/data/clip/merges.txt" "$@"
fi
"$build_dir/ggdiff" -m "$model" -p "a photograph of an astronaut riding a horse" \
  -W 64 -H 64 --steps 4 --sampling-method euler --cfg-scale 7 -s 42 \
  -o "$build_dir/demo.png" "$@"
echo "demo: wrote $build_dir/demo.png"
"$build_dir/ggdiff" -M metadata --image "$build_dir/demo.png"
