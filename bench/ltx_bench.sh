#!/usr/bin/env bash
# LTX-2.3 at the real width on this machine's CPU, ggdiff against the reference engine (REF_CLI,
# default /work/ref/sdcpp/build/bin/sd-cli, else /work/ref/sd/build/bin/sd-cli when that one is
# there; stable-diffusion.cpp 38a51f81), both on the same synthetic files: the golden DiT list
# (tests/fixtures/ltx_tiny_dit.tensors, which the reference takes) at LTX-2.3's real widths: the
# video stream 4096 wide (32 gated heads of 128, feed-forward 16384, nine modulations of 4096),
# the audio stream 2048 wide (32 heads of 64, feed-forward 8192), cross-attention to the
# 4096 / 2048-wide text contexts, the audio-video cross-attention between them, 128 latent
# channels; with one block and with two. One block's time is their difference, the rest of the
# one-block step (patchify, AdaLN embedders, output) is the one-block time minus it. A whole
# LTX-2.3 step is that rest + 48 blocks.
# The text encoder, embeddings connectors and video VAE are the ltx_tiny golden set's (Gemma 3 at
# its real 48 x 3840 with most attention holes, its synthetic tokenizer tests/golden/ltx_tiny/
# gemma3_tokenizer.json: the reference must have been built with that vocabulary, as the golden
# set's notes say, or its Gemma reads token ids past the 400-row table); they run once, outside
# the step time. No audio VAE: the audio latent is still sampled with the video (the step time
# covers both streams), only its decoding is left out.
#  - a WIDTH x HEIGHT x FRAMES request (default 768 x 512 x 121 at 24 fps: 24 x 16 x 16 = 6144
#    video tokens and 126 audio tokens), cfg 1 (one evaluation per step), euler, STEPS steps
#    (default 2); q4_0 matrices as the golden set's (and unsloth/LTX-2.3-GGUF's) files.
#    The default size takes minutes per block on a few CPU cores; e.g. WIDTH=256 HEIGHT=256
#    FRAMES=9 (128 video tokens) for a quick run.
# Fixtures are made once under FIXTURES (default BUILD_DIR/fixtures; the DiTs 0.46 and 0.68 GB,
# less on disk: the audio stream's own weights are zero holes, which cost the same products);
# CLEAN=1 deletes the two DiT files afterwards.
# Each engine's step time: the minimum over the steps after the first (ggdiff-bench's
# step_seconds; the reference's progress-bar rate per step), so STEPS should be 2 or more.
# Prints one JSON object. Environment: BUILD_DIR (default build), FIXTURES, WIDTH, HEIGHT, FRAMES,
# STEPS, REF (0: skip the reference engine), REF_CLI, THREADS (-t for both engines, default: all
# cores), CLEAN, FIXTURE_PYTHON (a Python with numpy, default /usr/bin/python3). Extra flags go
# to ggdiff-bench.
set -euo pipefail
if [ -z "${REF_CLI:-}" ] && [ ! -x /work/ref/sdcpp/build/bin/sd-cli ] &&
  [ -x /work/ref/sd/build/bin/sd-cli ]; then
  REF_CLI=/work/ref/sd/build/bin/sd-cli
fi
source "$(dirname "${BASH_SOURCE[0]}")/fixture.sh"
bench_settings ltx_bench "${WIDTH:-768}" "${STEPS:-2}"
width=$size
height=${HEIGHT:-512}
frames=${FRAMES:-121}
fps=24
blocks=48
mkdir -p "$fixtures"
golden=$bench_root/tests/golden/ltx_tiny
tokenizer=$golden/gemma3_tokenizer.json

gguf_fixture() {  # gguf_fixture NAME SEED -> path (the golden set's sparse GGUF)
  local file="$fixtures/$1.gguf"
  if [ ! -f "$file" ]; then
    echo "ltx_bench: generating $file" >&2
    "$python" "$bench_root/tests/tools/make_gguf_fixture.py" \
      "$bench_root/tests/fixtures/$1.tensors" "$file" --seed "$2" >&2
  fi
  echo "$file"
}
connectors=$(gguf_fixture ltx_tiny_connectors 62)
llm=$(gguf_fixture ltx_tiny_llm 63)
vae=$fixtures/ltx_tiny_vae.safetensors
if [ ! -f "$vae" ]; then
  echo "ltx_bench: generating $vae" >&2
  "$python" "$shared/tools/make_fixture.py" "$bench_root/tests/fixtures/ltx_tiny_vae.tensors" \
    "$vae" --seed 64 >&2
fi

# The golden DiT list at the real widths with N blocks: real_width OUT N.
real_width() {
  "$python" - "$bench_root/tests/fixtures/ltx_tiny_dit.tensors" "$2" >"$1" <<'PY'
import re
import sys
n = int(sys.argv[2])
W = 4096  # the video stream: 64 -> 4096, 4 gated heads -> 32 (of 128)
# tiny -> real in the video stream: width 64 -> 4096, its feed-forward 256 -> 16384, nine
# modulations 576 -> 9 x 4096, the prompt AdaLN's two 128 -> 2 x 4096, the audio-video AdaLN's
# four 256 -> 4 x 4096, gates 4 -> 32. The audio stream (2048, 32 heads of 64), the text
# contexts (4096 / 2048), the 128 latent channels and the 256 timestep features are real already.
video = {"64": str(W), "4": "32", "576": str(9 * W)}
wide = {"ff.net.0.proj.weight": {"256": str(4 * W)}, "ff.net.0.proj.bias": {"256": str(4 * W)},
        "ff.net.2.weight": {"256": str(4 * W)},
        "prompt_adaln_single.linear.": {"128": str(2 * W)},
        "av_ca_video_scale_shift_adaln_single.linear.": {"256": str(4 * W)}}
for line in open(sys.argv[1]):
    if line.startswith("#") or not line.strip():
        # The audio stream's zero holes stay (zeros cost the same products); every block's
        # audio-video attention is random.
        if line.startswith("#! zero:"):
            line = line.replace(r"|transformer_blocks\.1\.(audio_to_video|video_to_audio)_attn\.",
                                "")
        print(line, end="")
        continue
    name, shape = line.split()
    extra = {}
    for key, m in wide.items():
        if key in name and not name.startswith("audio_"):
            extra = m
    dims = [extra.get(d, video.get(d, d)) for d in shape.split(",")]
    if name.startswith("transformer_blocks.0."):
        for i in range(n):
            print(name.replace("transformer_blocks.0.", "transformer_blocks.%d." % i, 1),
                  ",".join(dims))
    elif not name.startswith("transformer_blocks."):
        print(name, ",".join(dims))
PY
}

fixture() {  # fixture N SEED -> path
  local stem=ltx_bench_dit_$1 file
  file="$fixtures/$stem.gguf"
  if [ ! -f "$file" ]; then
    real_width "$fixtures/$stem.tensors" "$1"
    echo "ltx_bench: generating $file" >&2
    "$python" "$bench_root/tests/tools/make_gguf_fixture.py" "$fixtures/$stem.tensors" "$file" \
      --seed "$2" >&2
  fi
  echo "$file"
}
dit1=$(fixture 1 161)
dit2=$(fixture 2 161)
prompt="a red cat walking on the grass"

ggdiff_run() {  # ggdiff_run DIT [flags...]
  local model=$1
  shift
  "$build_dir/ggdiff-bench" --diffusion-model "$model" --embeddings-connectors "$connectors" \
    --llm "$llm" --llm-tokenizer "$tokenizer" --vae "$vae" -p "$prompt" -W "$width" \
    -H "$height" --video-frames "$frames" --fps "$fps" --steps "$steps" \
    --sampling-method euler --cfg-scale 1 -s 42 -t "$threads" "$@"
}

ref_run() {  # ref_run DIT -> JSON {wall_seconds, sampling_seconds, step_seconds} or {error}
  local model=$1
  ref_timed ltx_bench "$steps" 1 \
    "$ref_cli" -M vid_gen --diffusion-model "$model" --embeddings-connectors "$connectors" \
    --llm "$llm" --vae "$vae" -p "$prompt" -W "$width" -H "$height" --video-frames "$frames" \
    --fps "$fps" --steps "$steps" --sampling-method euler --cfg-scale 1 -s 42 -t "$threads" \
    -o "$(mktemp -u).avi"
}

video_tokens=$(((width / 32) * (height / 32) * ((frames - 1) / 8 + 1)))
audio_tokens=$(((frames * 25 + fps - 1) / fps))
summary=$(block_pair_bench ltx \
  "ltx, ${width}x${height}x${frames}: $video_tokens video tokens, $audio_tokens audio tokens" \
  "$blocks" "$dit1" "$dit2" "$@")
if [ "${CLEAN:-0}" = 1 ]; then
  rm -f "$dit1" "$dit2" "${dit1%.gguf}.tensors" "${dit2%.gguf}.tensors"
fi
echo "$summary"
