#!/usr/bin/env bash
# Z-Image on this machine's default device, two measurements:
#  1. the zimage_tiny fixture (../shared/golden/zimage_tiny: one 256-wide DiT layer and one of
#     each refiner, a one-layer 512-wide Qwen3, the full FLUX VAE) at 256x256: euler, 4 steps;
#  2. one Z-Image Turbo main layer at the real width (bench/zimage_wide_layer.tensors: 3840
#     wide, 30 heads, FFN 10240) at 1024x1024, i.e. 4096 image tokens and 32 caption tokens,
#     2 steps. A real Turbo step runs 30 main layers and 2 noise refiners of the same cost, so
#     it takes about 32 x this step (the embedders and the final layer are in the measured step
#     once; the context refiners over 32 caption tokens are negligible): printed as
#     "turbo_step_estimate_seconds".
# Prints one JSON object with ggdiff-bench's figures (per-step seconds, peak RSS) per run.
# Environment: BUILD_DIR (default build), SKIP_WIDE=1 skips run 2, WIDE_STEPS (default 2).
# Extra flags go to ggdiff-bench (e.g. -t 2).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/fixture.sh"
dit=$(make_fixture zimage_tiny_dit 51)
llm=$(make_fixture zimage_tiny_llm 52)
vae=$(make_fixture flux_ae 14)
if [ ! -x "$build_dir/ggdiff-bench" ]; then
  echo "zimage_bench: $build_dir/ggdiff-bench is missing (cmake --build $build_dir --target ggdiff-bench)" >&2
  exit 1
fi

run() {  # run DIT SIZE STEPS [flags...]
  local model=$1 size=$2 steps=$3
  shift 3
  "$build_dir/ggdiff-bench" --diffusion-model "$model" --llm "$llm" --vae "$vae" \
    --llm-tokenizer "$shared/data/qwen2_synthetic" \
    -p "a photograph of an astronaut riding a horse" -W "$size" -H "$size" --steps "$steps" \
    --sampling-method euler -s 42 "$@"
}

echo "zimage_bench: zimage_tiny fixture, 256x256, 4 steps" >&2
tiny=$(run "$dit" 256 4 "$@")
results="{\"tiny_256\": $tiny"
if [ "${SKIP_WIDE:-0}" != 1 ]; then
  wide="$build_dir/fixtures/zimage_wide_layer.safetensors"
  if [ ! -f "$wide" ]; then
    echo "bench: generating $wide" >&2
    "$shared/tools/make_fixture.py" "$bench_root/bench/zimage_wide_layer.tensors" "$wide" \
      --seed 61 >&2
  fi
  echo "zimage_bench: one 3840-wide main layer, 1024x1024 (4096 image tokens)" >&2
  wide_run=$(run "$wide" 1024 "${WIDE_STEPS:-2}" "$@")
  results+=", \"wide_layer_1024\": $wide_run"
fi
results+="}"
python3 - "$results" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
w = r.get("wide_layer_1024")
if w:
    # Steps after the first (which also allocates) when there are several.
    steps = w["step_seconds"][1:] or w["step_seconds"]
    layer = sum(steps) / len(steps)
    r["wide_layer_step_seconds"] = round(layer, 3)
    r["turbo_step_estimate_seconds"] = round(32 * layer, 1)
    r["turbo_8_steps_estimate_seconds"] = round(8 * 32 * layer, 1)
print(json.dumps(r, indent=1))
PY
