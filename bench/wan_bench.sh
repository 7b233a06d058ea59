#!/usr/bin/env bash
# Wan 2.1 T2V 1.3B on this machine's default device. The wan_tiny fixture DiT is the real 1.3B
# (30 blocks, 1536 wide, FFN 8960: the reference engine takes nothing else), so the DiT is
# measured at its real width:
#  1. 64x64, 5 frames (2 latent frames, 32 tokens), 3 euler steps: the golden cases' size;
#  2. 256x256, 5 frames (2 latent frames of 16x16 patches: 512 tokens), 2 steps;
# and the step of a real request (832x480, 33 frames: 9 latent frames of 30x52 patches, 14040
# tokens) is estimated from run 2's step by the DiT's FLOP count (projections and FFN grow with
# the tokens, self-attention with their square): "real_832x480x33_step_estimate_seconds".
# With REF_SDCLI=path/to/sd-cli (the reference engine, ../shared/tools/build_reference.sh) each
# run is repeated with it and its sampling seconds per step (from its log) printed beside ours.
# Prints one JSON object. Environment: BUILD_DIR (default build), SKIP_256=1 skips run 2.
# Extra flags go to ggdiff-bench (e.g. -t 2).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/fixture.sh"
dit=$(make_fixture wan_1_3b_dit 91)
umt5=$(make_fixture wan_umt5 92)
vae=$(make_fixture qwen_vae 23)
if [ ! -x "$build_dir/ggdiff-bench" ]; then
  echo "wan_bench: $build_dir/ggdiff-bench is missing (cmake --build $build_dir --target ggdiff-bench)" >&2
  exit 1
fi
prompt="a photograph of an astronaut riding a horse"

run() {  # run SIZE FRAMES STEPS [flags...]
  local size=$1 frames=$2 steps=$3
  shift 3
  "$build_dir/ggdiff-bench" --diffusion-model "$dit" --t5xxl "$umt5" --vae "$vae" \
    --t5xxl-tokenizer "$shared/data/umt5_synthetic/tokenizer.json" -p "$prompt" \
    -W "$size" -H "$size" --video-frames "$frames" --steps "$steps" --cfg-scale 1 -s 42 "$@"
}

reference() {  # reference SIZE FRAMES STEPS -> seconds per sampling step (or null)
  if [ -z "${REF_SDCLI:-}" ]; then echo null; return; fi
  local out log
  out=$(mktemp -d)
  log="$out/log.txt"
  "$REF_SDCLI" -M vid_gen --diffusion-model "$dit" --t5xxl "$umt5" --vae "$vae" -p "$prompt" \
    -W "$1" -H "$1" --video-frames "$2" --steps "$3" --cfg-scale 1 -s 42 \
    -o "$out/f_%d.png" >"$log" 2>&1 || { echo null; return; }
  python3 - "$log" "$3" <<'PY'
import re, sys
m = re.search(r"sampling completed, taking ([\d.]+)s", open(sys.argv[1]).read())
print(round(float(m.group(1)) / int(sys.argv[2]), 3) if m else "null")
PY
}

echo "wan_bench: 1.3B DiT, 64x64, 5 frames, 3 steps" >&2
small=$(run 64 5 3 "$@")
results="{\"small_64x64x5\": $small, \"reference_small_step_seconds\": $(reference 64 5 3)"
if [ "${SKIP_256:-0}" != 1 ]; then
  echo "wan_bench: 1.3B DiT, 256x256, 5 frames (512 tokens), 2 steps" >&2
  mid=$(run 256 5 2 "$@")
  results+=", \"mid_256x256x5\": $mid, \"reference_mid_step_seconds\": $(reference 256 5 2)"
fi
results+="}"
python3 - "$results" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
def step(run):
    s = run["step_seconds"][1:] or run["step_seconds"]
    return sum(s) / len(s)
d, ffn, ctx, blocks = 1536, 8960, 512, 30
def flops(t):  # one DiT evaluation, multiply-adds x 2
    per_block = 2 * (4 * t * d * d + 2 * t * d * d + 2 * ctx * d * d + 2 * t * d * ffn
                     + 2 * t * t * d + 2 * t * ctx * d)
    return blocks * per_block
for key, tokens in (("small_64x64x5", 32), ("mid_256x256x5", 512)):
    if key in r:
        r[key + "_step_seconds"] = round(step(r[key]), 3)
if "mid_256x256x5" in r:
    real = 9 * 30 * 52
    r["real_832x480x33_tokens"] = real
    r["real_832x480x33_step_estimate_seconds"] = round(step(r["mid_256x256x5"]) * flops(real) / flops(512), 1)
print(json.dumps(r, indent=1))
PY
