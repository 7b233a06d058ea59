#!/usr/bin/env bash
# Lens at the real width on this machine's CPU, ggdiff against the reference engine (REF_CLI,
# default /work/ref/sdcpp/build/bin/sd-cli, stable-diffusion.cpp 38a51f81), both on the same
# synthetic files: Lens's DiT widths (1536 wide, 24 heads of 64, SwiGLU 4096, six modulations of
# 1536 per stream, four GPT-OSS states of 2880 through txt_in, 128 latent channels) with one
# block and with two; one block's time is their difference, the rest of the one-block step
# (embedders, txt_in, final layer) is the one-block time minus it. A whole Lens step is that
# rest + 48 blocks.
# The text encoder is the golden set's (tests/fixtures/lens_tiny_llm.tensors: GPT-OSS-20B's
# width and depth as a llama.cpp GGUF, most layers holes; it runs once, outside the step time)
# with its synthetic tokenizer (tests/golden/lens_tiny/gpt_oss_tokenizer.json: the reference
# must have been built with it, as the golden set's notes say); the VAE is the FLUX.2 fixture.
#  - a SIZE x SIZE output (default 256: 256 image tokens, about 33 text tokens), cfg 1 (one
#    evaluation per step), euler, STEPS steps (default 3), f16 DiT weights (the released
#    lens_bf16.safetensors is bf16).
# Fixtures are made once under FIXTURES (default BUILD_DIR/fixtures; about 0.7 GB for the DiTs,
# 60 MB on disk for the sparse LLM); CLEAN=1 deletes the two DiT files afterwards.
# Each engine's step time: the minimum over the steps after the first (ggdiff-bench's
# step_seconds; the reference's progress-bar rate per step), so STEPS should be 2 or more.
# Prints one JSON object. Environment: BUILD_DIR (default build), FIXTURES, SIZE, STEPS, REF (0:
# skip the reference engine), REF_CLI, THREADS (-t for both engines, default: all cores),
# CLEAN, FIXTURE_PYTHON (a Python with numpy, default /usr/bin/python3). Extra flags go to
# ggdiff-bench.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/fixture.sh"
bench_settings lens_bench 256 3
blocks=48
mkdir -p "$fixtures"
vae=$(make_fixture flux2_vae 73)
tokenizer=$bench_root/tests/golden/lens_tiny/gpt_oss_tokenizer.json

# The golden DiT list at the real widths with N blocks: real_width OUT N.
real_width() {
  "$python" - "$bench_root/tests/fixtures/lens_tiny_dit.tensors" "$2" >"$1" <<'PY'
import sys
n = int(sys.argv[2])
W = 1536
# tiny -> real: width 128 -> 1536, six modulations 768 -> 9216, fused qkv 384 -> 4608, SwiGLU
# 336 -> 4096; the head width (64), GPT-OSS's 2880 / 11520 and the 256 timestep features stay.
# Where 128 is the latent channels (img_in's input, proj_out's output) it stays.
block = {"128": str(W), "768": str(6 * W), "384": str(3 * W), "336": "4096"}
fixed = {"img_in.weight": [W, 128], "proj_out.weight": [128, W], "proj_out.bias": [128],
         "time_text_embed.timestep_embedder.linear_1.weight": [W, 256],
         "norm_out.linear.weight": [2 * W, W], "norm_out.linear.bias": [2 * W]}
for line in open(sys.argv[1]):
    if line.startswith("#") or not line.strip():
        print(line, end="")
        continue
    name, shape = line.split()
    if name in fixed:
        dims = [str(d) for d in fixed[name]]
    else:
        dims = [block.get(d, d) for d in shape.split(",")]
    if name.startswith("transformer_blocks.0."):
        for i in range(n):
            print(name.replace("transformer_blocks.0.", "transformer_blocks.%d." % i, 1),
                  ",".join(dims))
    elif not name.startswith("transformer_blocks."):
        print(name, ",".join(dims))
PY
}

fixture() {  # fixture N SEED -> path
  local stem=lens_bench_dit_$1 file
  file="$fixtures/$stem.safetensors"
  if [ ! -f "$file" ]; then
    real_width "$fixtures/$stem.tensors" "$1"
    echo "lens_bench: generating $file" >&2
    "$python" "$shared/tools/make_fixture.py" "$fixtures/$stem.tensors" "$file" --seed "$2" >&2
  fi
  echo "$file"
}
dit1=$(fixture 1 142)
dit2=$(fixture 2 142)
llm=$fixtures/lens_tiny_llm.gguf
if [ ! -f "$llm" ]; then
  echo "lens_bench: generating $llm" >&2
  "$python" "$bench_root/tests/tools/make_gguf_fixture.py" \
    "$bench_root/tests/fixtures/lens_tiny_llm.tensors" "$llm" --seed 141 >&2
fi
prompt="a red ring on a white background"

ggdiff_run() {  # ggdiff_run DIT [flags...]
  local model=$1
  shift
  "$build_dir/ggdiff-bench" --diffusion-model "$model" --llm "$llm" --vae "$vae" \
    --llm-tokenizer "$tokenizer" -p "$prompt" -W "$size" -H "$size" --steps "$steps" \
    --sampling-method euler --cfg-scale 1 -s 42 -t "$threads" "$@"
}

ref_run() {  # ref_run DIT -> JSON {wall_seconds, sampling_seconds, step_seconds} or {error}
  local model=$1
  ref_timed lens_bench "$steps" 1 \
    "$ref_cli" --diffusion-model "$model" --llm "$llm" --vae "$vae" -p "$prompt" -W "$size" \
    -H "$size" --steps "$steps" --sampling-method euler --cfg-scale 1 -s 42 -t "$threads" \
    -o "$(mktemp -u).png"
}

tokens=$(((size / 16) * (size / 16)))
summary=$(block_pair_bench lens "lens, ${size}x${size}: $tokens image tokens" "$blocks" "$dit1" \
  "$dit2" "$@")
if [ "${CLEAN:-0}" = 1 ]; then
  rm -f "$dit1" "$dit2" "${dit1%.safetensors}.tensors" "${dit2%.safetensors}.tensors"
fi
echo "$summary"
