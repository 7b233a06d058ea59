#!/usr/bin/env bash
# The main job: draws a picture from a prompt with ggdiff's built-in model
# (models/ggdiff-toy-shapes.safetensors, a small SD1-layout model trained here on 64x64
# pictures of coloured shapes; see models/README.md), then prints the image's metadata.
# Usage: scripts/demo.sh [MODEL.safetensors|.gguf] [extra ggdiff flags...]
#   e.g. scripts/demo.sh ~/models/v1-5-pruned-emaonly.safetensors -W 512 -H 512 --steps 20 \
#          -p "a lighthouse at dusk"
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${BUILD_DIR:-$here/build}"
args=(-p "a yellow star on a purple background" -s 42 -o "$build_dir/demo.png")
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
  args=(-m "$1" "${args[@]}")
  shift
fi
"$build_dir/ggdiff" "${args[@]}" "$@"
echo "demo: wrote $build_dir/demo.png"
"$build_dir/ggdiff" -M metadata --image "$build_dir/demo.png"
