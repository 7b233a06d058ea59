#!/usr/bin/env bash
# SeFi-Image at the real width on this machine's CPU, ggdiff against the reference engine
# (REF_CLI, default /work/ref/sdcpp/build/bin/sd-cli, stable-diffusion.cpp 38a51f81), both on the
# same synthetic files: a SeFi DiT of FLUX.2 klein 4B's widths (hidden 3072 = 24 heads x 128,
# SwiGLU 9216, the reference's default SeFi hidden size; 144 latent channels, the dual timestep
# embedding) with one double block and one single block, and with a second single block; one
# single block's time is their difference, the rest of the one-block step (embedders, shared
# modulation, the double block, final layer) is the one-block time minus it; the printed whole
# step is that rest + 20 single blocks (a 5B's double blocks beyond the first are not counted).
# The text input is 384 wide (the flux2_tiny Qwen3 fixture, whose 1024 padded tokens still reach
# the DiT) instead of 3 x the LLM's width: txt_in runs once per step, a small part of it.
#  - a SIZE x SIZE output (default 256: 256 image tokens + 1024 text tokens), cfg 1 (turbo: one
#    evaluation per step), STEPS steps (default 2), f16 weights.
# Fixtures are made once under FIXTURES (default BUILD_DIR/fixtures; about 1.7 GB in all).
# Each engine's step time: the minimum over the steps after the first (ggdiff-bench's
# step_seconds; the reference's progress-bar rate per step), so STEPS should be 2 or more.
# Prints one JSON object. Environment: BUILD_DIR (default build), FIXTURES, SIZE, STEPS, REF (0:
# skip the reference engine), REF_CLI, THREADS (-t for both engines, default: all cores). Extra
# flags go to ggdiff-bench.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/fixture.sh"
bench_settings sefi_bench 256 2
blocks=20
mkdir -p "$fixtures"
llm=$(make_fixture flux2_tiny_llm 72)
vae=$(make_fixture flux2_vae 73)

# The real-width SeFi DiT with 1 double and N single blocks: FLUX.2's wide block list with
# SeFi's 144 channels and dual timestep embedding.
real_width_dit() {  # real_width_dit N -> path
  local n=$1 list="$fixtures/sefi_bench_${1}single.tensors"
  local file="$fixtures/sefi_bench_${1}single.safetensors"
  if [ ! -f "$file" ]; then
    python3 - "$bench_root/bench/flux2_wide_block.tensors" "$n" >"$list" <<'PY'
import sys
n = int(sys.argv[2])
for line in open(sys.argv[1]):
    if line.startswith("#") or not line.strip():
        print(line, end="")
        continue
    name, shape = line.split()
    if name.startswith("time_in."):
        continue
    if name == "img_in.weight":
        shape = "3072,144"
    if name == "final_layer.linear.weight":
        shape = "144,3072"
    if name.startswith("single_blocks.0."):
        for i in range(n):
            print(name.replace("single_blocks.0.", "single_blocks.%d." % i), shape)
        continue
    print(name, shape)
    if name == "txt_in.weight":
        for e in ("semantic", "texture"):
            print("dual_time_embed.%s_embedder.linear_1.weight 1536,256" % e)
            print("dual_time_embed.%s_embedder.linear_2.weight 1536,1536" % e)
PY
    echo "sefi_bench: generating $file" >&2
    "$shared/tools/make_fixture.py" "$list" "$file" --seed 93 >&2
  fi
  echo "$file"
}
dit1=$(real_width_dit 1)
dit2=$(real_width_dit 2)
prompt="a photograph of an orange tabby cat sitting on a couch"

ggdiff_run() {  # ggdiff_run DIT [flags...]
  local model=$1
  shift
  "$build_dir/ggdiff-bench" --diffusion-model "$model" --llm "$llm" --vae "$vae" \
    --llm-tokenizer "$shared/data/qwen2_synthetic" -p "$prompt" -W "$size" -H "$size" \
    --steps "$steps" --cfg-scale 1 -s 42 -t "$threads" "$@"
}

ref_run() {  # ref_run DIT -> JSON {wall_seconds, sampling_seconds, step_seconds} or {error}
  local model=$1
  ref_timed sefi_bench "$steps" 1 \
    "$ref_cli" --diffusion-model "$model" --llm "$llm" --vae "$vae" -p "$prompt" -W "$size" \
    -H "$size" --steps "$steps" --cfg-scale 1 -s 42 -t "$threads" -o "$(mktemp -u).png"
}

tokens=$(((size / 16) * (size / 16)))
note="sefi_image, ${size}x${size}: $tokens image tokens, 1024 text tokens"
echo "sefi_bench: $note" >&2
results="{\"family\": \"sefi_image\", \"size\": $size, \"steps\": $steps, \"threads\": $threads, \"note\": \"$note\""
for pair in "1:$dit1" "2:$dit2"; do
  n=${pair%%:*}
  dit=${pair#*:}
  echo "sefi_bench: 1 double + $n single block(s), ggdiff" >&2
  results+=", \"ggdiff_${n}_blocks\": $(ggdiff_run "$dit" "$@")"
  if [ "${REF:-1}" != 0 ] && [ -x "$ref_cli" ]; then
    echo "sefi_bench: 1 double + $n single block(s), reference $ref_cli" >&2
    results+=", \"reference_${n}_blocks\": $(ref_run "$dit")"
  fi
done
results+="}"

python3 "$bench_root/bench/block_estimate.py" "$results" "$blocks" "single blocks (+ the rest: one double block, embedders, final layer)"
