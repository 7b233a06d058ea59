#!/usr/bin/env bash
# Anima at the real width on this machine's CPU, ggdiff against the reference engine (REF_CLI,
# default /work/ref/sdcpp/build/bin/sd-cli, stable-diffusion.cpp 38a51f81), both on the same
# synthetic files: the Anima DiT (hidden 2048 = 16 heads of 128, MLP 8192, the 6-block LLM
# adapter) with one block (the golden fixture, tests/fixtures/anima_tiny_dit.tensors) and with
# two; one block's time is their difference, the rest of the one-block step (embedders, final
# layer; and in the reference the LLM adapter, which it runs at every step) is the one-block
# time minus it. A whole Anima step is that rest + 28 blocks.
#  - a SIZE x SIZE output (default 512: 1024 image tokens, 512 context tokens), cfg 1 (one
#    evaluation per step), euler, STEPS steps (default 3); the text encoder is the golden set's
#    one-layer Qwen3 (1024 wide), the VAE the shared Wan 2.1 fixture.
# Fixtures are made once under FIXTURES (default BUILD_DIR/fixtures; about 1.5 GB in all).
# Each engine's step time: the minimum over the steps after the first (ggdiff-bench's
# step_seconds; the reference's progress-bar rate per step, its first step loading the weights
# lazily), so STEPS should be 2 or more.
# Prints one JSON object. Environment: BUILD_DIR (default build), FIXTURES, SIZE, STEPS, REF (0:
# skip the reference engine), REF_CLI, THREADS (-t for both engines, default: all cores). Extra
# flags go to ggdiff-bench.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/fixture.sh"
bench_settings anima_bench 512 3
blocks=28
mkdir -p "$fixtures"

repo_fixture() {  # repo_fixture LIST SEED [NAME] -> path (tests/fixtures/LIST.tensors)
  local list="$bench_root/tests/fixtures/$1.tensors" file="$fixtures/${3:-$1}.safetensors"
  if [ ! -f "$file" ]; then
    echo "anima_bench: generating $file" >&2
    "$shared/tools/make_fixture.py" "$list" "$file" --seed "$2" >&2
  fi
  echo "$file"
}

dit1=$(repo_fixture anima_tiny_dit 61)
llm=$(repo_fixture anima_tiny_llm 62)
vae=$(make_fixture qwen_vae 23)
# The same DiT with a second block (block 0's names repeated as block 1).
list2="$fixtures/anima_bench_2blocks.tensors"
dit2="$fixtures/anima_bench_2blocks.safetensors"
if [ ! -f "$list2" ]; then
  { cat "$bench_root/tests/fixtures/anima_tiny_dit.tensors"
    sed -n 's/^net\.blocks\.0\./net.blocks.1./p' "$bench_root/tests/fixtures/anima_tiny_dit.tensors"
  } >"$list2"
fi
if [ ! -f "$dit2" ]; then
  echo "anima_bench: generating $dit2" >&2
  "$shared/tools/make_fixture.py" "$list2" "$dit2" --seed 63 >&2
fi
prompt="a photograph of an astronaut riding a horse"
tok=(--llm-tokenizer "$shared/data/qwen2_synthetic" --t5xxl-tokenizer "$shared/data/t5_synthetic")

ggdiff_run() {  # ggdiff_run DIT [flags...]
  local model=$1
  shift
  "$build_dir/ggdiff-bench" --diffusion-model "$model" --llm "$llm" --vae "$vae" "${tok[@]}" \
    -p "$prompt" -W "$size" -H "$size" --steps "$steps" --sampling-method euler --cfg-scale 1 \
    -s 42 -t "$threads" "$@"
}

ref_run() {  # ref_run DIT -> JSON {wall_seconds, sampling_seconds, step_seconds} or {error}
  local model=$1
  ref_timed anima_bench "$steps" 1 \
    "$ref_cli" --diffusion-model "$model" --llm "$llm" --vae "$vae" -p "$prompt" -W "$size" \
    -H "$size" --steps "$steps" --sampling-method euler --cfg-scale 1 -s 42 -t "$threads" \
    -o "$(mktemp -u).png"
}

tokens=$(((size / 16) * (size / 16)))
note="anima, ${size}x${size}: $tokens image tokens, 512 context tokens"
echo "anima_bench: $note" >&2
results="{\"family\": \"anima\", \"size\": $size, \"steps\": $steps, \"threads\": $threads, \"note\": \"$note\""
for pair in "1:$dit1" "2:$dit2"; do
  n=${pair%%:*}
  dit=${pair#*:}
  echo "anima_bench: $n block(s), ggdiff" >&2
  results+=", \"ggdiff_${n}_blocks\": $(ggdiff_run "$dit" "$@")"
  if [ "${REF:-1}" != 0 ] && [ -x "$ref_cli" ]; then
    echo "anima_bench: $n block(s), reference $ref_cli" >&2
    results+=", \"reference_${n}_blocks\": $(ref_run "$dit")"
  fi
done
results+="}"

python3 "$bench_root/bench/block_estimate.py" "$results" "$blocks" "blocks"
