#!/usr/bin/env bash
# LoRA cost on the SD1 fixture (sd1_mc32) with the kohya fixture LoRA (rank 4, 132 modules:
# UNet attention and all 12 CLIP-L layers): 64x64, 4 steps, euler, once merged into the
# weights (lora_seconds = reading and merging) and once applied at run time (lora_seconds =
# uploading the factors; the steps pay for the extra products). Prints one JSON object with
# both ggdiff-bench results. Extra flags go to ggdiff-bench (e.g. -t 2).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/fixture.sh"
model=$(make_fixture sd1_mc32 1)
loras="$build_dir/fixtures/sd1_lora_loras"
if [ ! -f "$loras/kohya.safetensors" ]; then
  mkdir -p "$loras"
  "$shared/tools/make_fixture.py" "$shared/fixtures/lora_kohya_sd1.tensors" \
    "$loras/kohya.safetensors" --seed 21 >&2
fi
run() {
  "$build_dir/ggdiff-bench" -m "$model" --lora-model-dir "$loras" --lora-apply-mode "$1" \
    -p "a photograph of an astronaut riding a horse<lora:kohya:1>" -W 64 -H 64 --steps 4 \
    --sampling-method euler -s 42 "${@:2}"
}
merged=$(run immediately "$@")
runtime=$(run at_runtime "$@")
printf '{"immediately": %s, "at_runtime": %s}\n' "$merged" "$runtime"
