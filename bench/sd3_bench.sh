#!/usr/bin/env bash
# SD3 / SD3.5 on this machine's default device:
#  1. one SD3.5 Medium joint block at the real width (bench/sd3_wide_block.tensors: hidden 1536 =
#     24 heads x 64, MLP 6144, context 4096 wide, pooled 2048; an MMDiT-X block with attn2) at
#     1024x1024, i.e. 4096 image tokens + 154 text tokens (77 CLIP + 77 T5), CFG on (two
#     evaluations per step, as users run SD3), WIDE_STEPS steps (default 2), with the sd3_tiny
#     text encoders (CLIP-L, the full-size bigG, the 4096-wide one-block T5) and the FLUX VAE.
#     Printed: the step time of that one block ("block_step_seconds", the embedders and the final
#     layer included once) and the whole-step estimates x 24 blocks (SD3.5 Medium) and x 38
#     (SD3.5 Large, whose blocks are also wider: hidden 2432, so that one is a lower bound).
#  2. the reference engine (REF_CLI, default /work/ref/sdcpp/build/bin/sd-cli) when it is
#     present and REF is not 0: it accepts no model of fewer than 24 joint blocks (its depth
#     starts at 24 and heads = depth), so both engines run a 24-block file at the same width
#     (made once from the same block list: blocks 0-22 full, block 0 with attn2, block 23
#     pre-only; 4.4 GB) at REF_SIZE (default 512: 1024 image tokens; 1024 takes minutes per
#     step on a CPU) for REF_STEPS steps (default 1); the reference's figure is its own
#     "sampling completed, taking" time divided by the steps.
# Prints one JSON object. Environment: BUILD_DIR (default build), WIDE_SIZE (default 1024),
# WIDE_STEPS, REF, REF_CLI, REF_SIZE, REF_STEPS, THREADS (-t for both engines, default: all
# cores). Extra flags go to ggdiff-bench.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/fixture.sh"
mmdit_list="$bench_root/bench/sd3_wide_block.tensors"
clip_l=$(make_fixture flux_clip_l 12)
clip_g=$(make_fixture sd3_clip_g 62)
t5=$(make_fixture sd3_t5_4096 63)
vae=$(make_fixture flux_ae 14)
t5_tok="$shared/data/t5_synthetic/tokenizer.json"
merges="$shared/data/clip/merges.txt"
threads=${THREADS:-$(nproc)}
if [ ! -x "$build_dir/ggdiff-bench" ]; then
  echo "sd3_bench: $build_dir/ggdiff-bench is missing (cmake --build $build_dir --target ggdiff-bench)" >&2
  exit 1
fi
prompt="a photograph of an astronaut riding a horse"

block="$build_dir/fixtures/sd3_wide_block.safetensors"
if [ ! -f "$block" ]; then
  echo "bench: generating $block" >&2
  "$shared/tools/make_fixture.py" "$mmdit_list" "$block" --seed 71 >&2
fi

ggdiff_run() {  # ggdiff_run MMDIT SIZE STEPS [flags...]
  local model=$1 size=$2 steps=$3
  shift 3
  "$build_dir/ggdiff-bench" --diffusion-model "$model" --clip_l "$clip_l" --clip_g "$clip_g" \
    --t5xxl "$t5" --vae "$vae" --tokenizer "$merges" --t5xxl-tokenizer "$t5_tok" -p "$prompt" \
    -W "$size" -H "$size" --steps "$steps" --sampling-method euler --cfg-scale 4.5 -s 42 \
    -t "$threads" "$@"
}

echo "sd3_bench: one 1536-wide joint block, ${WIDE_SIZE:-1024}x${WIDE_SIZE:-1024}" >&2
wide=$(ggdiff_run "$block" "${WIDE_SIZE:-1024}" "${WIDE_STEPS:-2}" "$@")
results="{\"wide_block\": $wide"

ref_cli=${REF_CLI:-/work/ref/sdcpp/build/bin/sd-cli}
if [ "${REF:-1}" != 0 ] && [ -x "$ref_cli" ]; then
  full_list="$build_dir/fixtures/sd3_wide_24.tensors"
  full="$build_dir/fixtures/sd3_wide_24.safetensors"
  if [ ! -f "$full" ]; then
    python3 - "$mmdit_list" "$full_list" <<'PY'
import sys
src, out = sys.argv[1], sys.argv[2]
H, M = 1536, 6144
top, block = [], []
for line in open(src):
    line = line.split("#")[0].strip()
    if not line:
        continue
    (block if line.startswith("joint_blocks.0.") else top).append(line)
lines = ["# 24 SD3.5 Medium joint blocks at the real width (bench/sd3_bench.sh)"] + top
def lin(name, o, i):
    lines.append("%s.weight %d,%d" % (name, o, i))
    lines.append("%s.bias %d" % (name, o))
for b in range(24):
    p = "joint_blocks.%d." % b
    last = b == 23
    for line in block:
        name, shape = line.split()
        rest = name[len("joint_blocks.0."):]
        if ".attn2." in rest and b != 0:
            continue
        if rest.startswith("x_block.adaLN_modulation.1."):
            chunks = 9 if b == 0 else 6
            shape = "%d,%d" % (chunks * H, H) if rest.endswith("weight") else str(chunks * H)
        if rest.startswith("context_block.adaLN_modulation.1.") and not last:
            shape = "%d,%d" % (6 * H, H) if rest.endswith("weight") else str(6 * H)
        lines.append("%s%s %s" % (p, rest, shape))
    if not last:
        lin(p + "context_block.attn.proj", H, H)
        lin(p + "context_block.mlp.fc1", M, H)
        lin(p + "context_block.mlp.fc2", H, M)
open(out, "w").write("\n".join(lines) + "\n")
PY
    echo "bench: generating $full (4.4 GB)" >&2
    "$shared/tools/make_fixture.py" "$full_list" "$full" --seed 72 >&2
  fi
  ref_size=${REF_SIZE:-512}
  ref_steps=${REF_STEPS:-1}
  echo "sd3_bench: 24 blocks, ${ref_size}x${ref_size}, ggdiff" >&2
  ours=$(ggdiff_run "$full" "$ref_size" "$ref_steps" "$@")
  echo "sd3_bench: 24 blocks, ${ref_size}x${ref_size}, reference $ref_cli" >&2
  log=$(mktemp)
  start=$(date +%s.%N)
  "$ref_cli" --diffusion-model "$full" --clip_l "$clip_l" --clip_g "$clip_g" --t5xxl "$t5" \
    --vae "$vae" -p "$prompt" -W "$ref_size" -H "$ref_size" --steps "$ref_steps" \
    --sampling-method euler --cfg-scale 4.5 -s 42 -t "$threads" -o "$(mktemp -u).png" \
    >"$log" 2>&1 || { tail -20 "$log" >&2; echo "sd3_bench: the reference failed" >&2; }
  end=$(date +%s.%N)
  ref=$(python3 - "$log" "$start" "$end" "$ref_steps" <<'PY'
import json, re, sys
text = open(sys.argv[1], errors="replace").read()
m = re.search(r"sampling completed, taking ([\d.]+)s", text)
steps = int(sys.argv[4])
out = {"wall_seconds": round(float(sys.argv[3]) - float(sys.argv[2]), 1)}
if m:
    out["sampling_seconds"] = float(m.group(1))
    out["step_seconds"] = round(float(m.group(1)) / steps, 3)
print(json.dumps(out))
PY
)
  rm -f "$log"
  results+=", \"full_24_blocks\": {\"size\": $ref_size, \"steps\": $ref_steps, \"ggdiff\": $ours, \"reference\": $ref}"
fi
results+="}"
python3 - "$results" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
w = r["wide_block"]
steps = w["step_seconds"][1:] or w["step_seconds"]  # the first step also allocates
block = sum(steps) / len(steps)
r["block_step_seconds"] = round(block, 3)
r["sd35_medium_step_estimate_seconds"] = round(24 * block, 1)
r["sd35_large_step_estimate_seconds_lower_bound"] = round(38 * block, 1)
f = r.get("full_24_blocks")
if f:
    ours = f["ggdiff"]["step_seconds"]
    f["ggdiff_step_seconds"] = round(min(ours), 3)
    ref = f["reference"].get("step_seconds")
    if ref:
        f["reference_over_ggdiff"] = round(ref / min(ours), 2)
print(json.dumps(r, indent=1))
PY
