#!/usr/bin/env bash
# Qwen Image Edit on this machine's default device, ggdiff against the reference engine
# (REF_CLI, default /work/ref/sdcpp/build/bin/sd-cli; REF=0 skips it):
#  a. the Qwen2.5-VL vision tower at the real width (bench/qwen_vision_wide.tensors: 1280 wide,
#     MLP 3420, merger 5120 -> 3584; 8 of the 32 blocks, block 7 full attention as in the real
#     tower, so x4 estimates it) reading one VISION_SIZE (default 1024) square reference: smart
#     resize to 560x560, 1600 patches, 400 tokens for the LLM. One 64x64 step at cfg 1 around it.
#     ggdiff: the vision graph's own time from GGDIFF_PROFILE=1 ("profile vision: X s"; it
#     computes node by node, a slight overestimate) and the whole text phase (vision + the
#     1-layer LLM over ~600 tokens) from ggdiff-bench; the reference logs no vision time of its
#     own: its "get_learned_condition completed, taking" (vision + LLM) is the comparable figure.
#     Printed: "vision_seconds" (ggdiff, 8 blocks), "vision_32_blocks_estimate_seconds",
#     "text_seconds" for both engines.
#  b. one Qwen Image DiT block at the real width (the qwen_edit_tiny DiT: 3072 wide, 24 heads of
#     128, MLP 12288, joint attention with the 3584-wide text) at DIT_SIZE (default 1024) with
#     one reference of the same size (1024: 4096 + 4096 = 8192 image tokens), DIT_STEPS steps
#     (default 2) at cfg 1; step seconds of both engines (the reference's "sampling completed,
#     taking" divided by the steps) and "step_60_blocks_estimate_seconds" = 60 x ggdiff's step
#     (the embedders and the final layer counted 60 times: a slight overestimate).
# Prints one JSON object. Environment: BUILD_DIR (default build), VISION_SIZE, DIT_SIZE,
# DIT_STEPS, REF, REF_CLI, THREADS (-t for both engines, default: all cores). Extra flags go to
# ggdiff-bench.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/fixture.sh"
dit=$(make_fixture qwen_edit_tiny_dit 112)
llm=$(make_fixture qwen_edit_tiny_llm 111)
vae=$(make_fixture qwen_edit_vae 113)
tok="$shared/data/qwen2_synthetic"
threads=${THREADS:-$(nproc)}
ref_cli=${REF_CLI:-/work/ref/sdcpp/build/bin/sd-cli}
for exe in ggdiff ggdiff-bench; do
  if [ ! -x "$build_dir/$exe" ]; then
    echo "qwen_edit_bench: $build_dir/$exe is missing (cmake --build $build_dir --target $exe)" >&2
    exit 1
  fi
done
wide="$build_dir/fixtures/qwen_vision_wide.safetensors"
if [ ! -f "$wide" ]; then
  echo "bench: generating $wide" >&2
  "$shared/tools/make_fixture.py" "$bench_root/bench/qwen_vision_wide.tensors" "$wide" --seed 114 >&2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Square references: a few shapes on a plain background, as the golden references.
square() {  # square SIZE PATH
  /usr/bin/python3 - "$1" "$2" <<'PY'  # Debian's python3-pil
import sys
from PIL import Image, ImageDraw
n = int(sys.argv[1])
im = Image.new("RGB", (n, n), (230, 220, 200))
d = ImageDraw.Draw(im)
d.ellipse((n // 8, n // 8, n // 2, n // 2), fill=(200, 30, 30))
d.rectangle((n // 2, n // 2, 7 * n // 8, 7 * n // 8), fill=(30, 60, 200))
im.save(sys.argv[2])
PY
}
vision_size=${VISION_SIZE:-1024}
dit_size=${DIT_SIZE:-1024}
dit_steps=${DIT_STEPS:-2}
square "$vision_size" "$work/vision_ref.png"
square "$dit_size" "$work/dit_ref.png"
prompt="make the red circle green"

# ref_run LOG DIT LLM SIZE STEPS REF_IMAGE: the reference engine; prints {"wall_seconds",
# "text_seconds", "step_seconds"} from its log.
ref_run() {
  local log=$1 model=$2 te=$3 size=$4 steps=$5 image=$6 start end
  start=$(date +%s.%N)
  "$ref_cli" --diffusion-model "$model" --llm "$te" --vae "$vae" -p "$prompt" -W "$size" \
    -H "$size" --steps "$steps" --cfg-scale 1 -s 42 -r "$image" -t "$threads" \
    -o "$work/ref.png" >"$log" 2>&1 || { tail -20 "$log" >&2; echo "qwen_edit_bench: the reference failed" >&2; }
  end=$(date +%s.%N)
  python3 - "$log" "$start" "$end" "$steps" <<'PY'
import json, re, sys
text = open(sys.argv[1], errors="replace").read()
out = {"wall_seconds": round(float(sys.argv[3]) - float(sys.argv[2]), 1)}
m = re.search(r"get_learned_condition completed, taking ([\d.]+)(m?s)", text)
if m:
    out["text_seconds"] = float(m.group(1)) / (1000.0 if m.group(2) == "ms" else 1.0)
m = re.search(r"sampling completed, taking ([\d.]+)s", text)
if m:
    out["step_seconds"] = round(float(m.group(1)) / int(sys.argv[4]), 3)
print(json.dumps(out))
PY
}

echo "qwen_edit_bench: a. vision tower (8 of 32 blocks), ${vision_size}x${vision_size} reference, ggdiff" >&2
vision_bench=$("$build_dir/ggdiff-bench" --diffusion-model "$dit" --llm "$wide" --vae "$vae" \
  --llm-tokenizer "$tok" -p "$prompt" -W 64 -H 64 --steps 1 --cfg-scale 1 -s 42 \
  -r "$work/vision_ref.png" -t "$threads" "$@")
GGDIFF_PROFILE=1 "$build_dir/ggdiff" --diffusion-model "$dit" --llm "$wide" --vae "$vae" \
  --llm-tokenizer "$tok" -p "$prompt" -W 64 -H 64 --steps 1 --cfg-scale 1 -s 42 \
  -r "$work/vision_ref.png" -t "$threads" -v -o "$work/profile.png" >"$work/profile.log" 2>&1
vision_secs=$(sed -n 's/.*profile vision: \([0-9.]*\) s.*/\1/p' "$work/profile.log" | head -1)
vision_tokens=$(sed -n 's/.*reference image 1: \([0-9]*\) vision tokens.*/\1/p' "$work/profile.log" | head -1)
results="{\"vision\": {\"size\": $vision_size, \"tokens\": ${vision_tokens:-null}, "
results+="\"vision_seconds\": ${vision_secs:-null}, \"ggdiff\": $vision_bench"
if [ "${REF:-1}" != 0 ] && [ -x "$ref_cli" ]; then
  echo "qwen_edit_bench: a. vision tower, reference" >&2
  results+=", \"reference\": $(ref_run "$work/ref_vision.log" "$dit" "$wide" 64 1 "$work/vision_ref.png")"
fi
results+="}"

echo "qwen_edit_bench: b. one 3072-wide DiT block, ${dit_size}x${dit_size} + one reference, ggdiff" >&2
dit_bench=$("$build_dir/ggdiff-bench" --diffusion-model "$dit" --llm "$llm" --vae "$vae" \
  --llm-tokenizer "$tok" -p "$prompt" -W "$dit_size" -H "$dit_size" --steps "$dit_steps" \
  --cfg-scale 1 -s 42 -r "$work/dit_ref.png" -t "$threads" "$@")
results+=", \"dit_block\": {\"size\": $dit_size, \"steps\": $dit_steps, \"ggdiff\": $dit_bench"
if [ "${REF:-1}" != 0 ] && [ -x "$ref_cli" ]; then
  echo "qwen_edit_bench: b. one DiT block, reference" >&2
  results+=", \"reference\": $(ref_run "$work/ref_dit.log" "$dit" "$llm" "$dit_size" "$dit_steps" "$work/dit_ref.png")"
fi
results+="}}"
python3 - "$results" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
v = r["vision"]
if v.get("vision_seconds") is not None:
    v["vision_32_blocks_estimate_seconds"] = round(4 * v["vision_seconds"], 2)
v["ggdiff_text_seconds"] = v["ggdiff"].get("text_seconds")
if v.get("reference", {}).get("text_seconds"):
    v["reference_text_seconds"] = v["reference"]["text_seconds"]
d = r["dit_block"]
steps = d["ggdiff"]["step_seconds"]
steps = steps[1:] or steps  # the first step also allocates
ours = sum(steps) / len(steps)
d["ggdiff_step_seconds"] = round(ours, 3)
d["step_60_blocks_estimate_seconds"] = round(60 * ours, 1)
ref = d.get("reference", {}).get("step_seconds")
if ref:
    d["reference_step_seconds"] = ref
    d["reference_over_ggdiff"] = round(ref / ours, 2)
print(json.dumps(r, indent=1))
PY
