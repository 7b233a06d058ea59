#!/usr/bin/env bash
# Krea2 at the real width on this machine's CPU, ggdiff against the reference engine (REF_CLI,
# default /work/ref/sdcpp/build/bin/sd-cli, stable-diffusion.cpp 38a51f81), both on the same
# synthetic files: Krea 2's DiT widths (6144 wide, 48 heads of 128 with 12 key/value heads,
# SwiGLU 16384; the text fusion 2560 wide, 20 heads of 128, SwiGLU 6912, its 2 layerwise and 2
# refiner blocks) with one single-stream block and with two; one block's time is their
# difference, the rest of the one-block step (embedders, text fusion, final layer) is the
# one-block time minus it. A whole Krea2 step is that rest + 28 blocks.
# The text encoder is Qwen3-VL-4B's width (2560: the text fusion reads it) with 5 layers, so the
# DiT stacks 2 states (layers 2 and 5) where the real one stacks 12 of 36 layers (the text fusion
# runs over 2 states instead of 12: a small part of the step).
#  - a SIZE x SIZE output (default 256: 256 image tokens), cfg 1 (one evaluation per step),
#    euler, STEPS steps (default 3), f16 weights.
# Fixtures are made once under FIXTURES (default BUILD_DIR/fixtures; about 5 GB in all).
# Each engine's step time: the minimum over the steps after the first (ggdiff-bench's
# step_seconds; the reference's progress-bar rate per step), so STEPS should be 2 or more.
# Prints one JSON object. Environment: BUILD_DIR (default build), FIXTURES, SIZE, STEPS, REF (0:
# skip the reference engine), REF_CLI, THREADS (-t for both engines, default: all cores). Extra
# flags go to ggdiff-bench.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/fixture.sh"
bench_settings krea2_bench 256 3
blocks=28
mkdir -p "$fixtures"
vae=$(make_fixture qwen_vae 23)

# A golden fixture's list at the real widths: real_width LIST OUT N (N: single-stream blocks of
# the DiT, or layers of the LLM).
real_width() {
  python3 - "$bench_root/tests/fixtures/$1" "$3" >"$2" <<'PY'
import sys
n = int(sys.argv[2])
llm = "llm" in sys.argv[1]
# tiny -> real. DiT: width 256 -> 6144, text 320 -> 2560, heads 16 -> 128, key/value rows 64 ->
# 1536, SwiGLU 768 -> 16384 and 896 -> 6912, six modulations 1536 -> 36864, stacked states 4 ->
# 2. LLM: width 320 -> 2560 (heads fixed at 32 of 128, 8 key/value heads; MLP 64 kept).
dit = {"256": "6144", "320": "2560", "16": "128", "64": "1536", "768": "16384", "896": "6912",
       "1536": "36864", "4": "2"}
for line in open(sys.argv[1]):
    if line.startswith("#") or not line.strip():
        print(line, end="")
        continue
    name, shape = line.split()
    dims = shape.split(",")
    if llm:
        if name.startswith("model.layers.") and int(name.split(".")[2]) >= n:
            continue
        print(name, ",".join("2560" if d == "320" else d for d in dims))
        continue
    if name in ("first.weight", "last.linear.weight", "last.linear.bias"):
        dims = [d if d == "64" else dit[d] for d in dims]  # 64 = 16 channels x 2x2 patches
    elif name == "tmlp.0.weight":
        dims = [dit[dims[0]], dims[1]]  # 256 timestep features
    else:
        dims = [dit.get(d, d) for d in dims]
    if name.startswith("blocks.0."):
        for i in range(n):
            print(name.replace("blocks.0.", "blocks.%d." % i, 1), ",".join(dims))
    elif not name.startswith("blocks."):
        print(name, ",".join(dims))
PY
}

fixture() {  # fixture LIST N SEED -> path
  local stem=krea2_bench_${1%%.*}_$2 file
  file="$fixtures/$stem.safetensors"
  if [ ! -f "$file" ]; then
    real_width "$1" "$fixtures/$stem.tensors" "$2"
    echo "krea2_bench: generating $file" >&2
    "$shared/tools/make_fixture.py" "$fixtures/$stem.tensors" "$file" --seed "$3" >&2
  fi
  echo "$file"
}
dit1=$(fixture krea2_tiny_dit.tensors 1 83)
dit2=$(fixture krea2_tiny_dit.tensors 2 83)
llm=$(fixture krea2_tiny_llm.tensors 5 84)
prompt="a photograph of an astronaut riding a horse"

ggdiff_run() {  # ggdiff_run DIT [flags...]
  local model=$1
  shift
  "$build_dir/ggdiff-bench" --diffusion-model "$model" --llm "$llm" --vae "$vae" \
    --llm-tokenizer "$shared/data/qwen2_synthetic" -p "$prompt" -W "$size" -H "$size" \
    --steps "$steps" --sampling-method euler --cfg-scale 1 -s 42 -t "$threads" "$@"
}

ref_run() {  # ref_run DIT -> JSON {wall_seconds, sampling_seconds, step_seconds} or {error}
  local model=$1
  ref_timed krea2_bench "$steps" 1 \
    "$ref_cli" --diffusion-model "$model" --llm "$llm" --vae "$vae" -p "$prompt" -W "$size" \
    -H "$size" --steps "$steps" --sampling-method euler --cfg-scale 1 -s 42 -t "$threads" \
    -o "$(mktemp -u).png"
}

tokens=$(((size / 16) * (size / 16)))
note="krea2, ${size}x${size}: $tokens image tokens"
echo "krea2_bench: $note" >&2
results="{\"family\": \"krea2\", \"size\": $size, \"steps\": $steps, \"threads\": $threads, \"note\": \"$note\""
for pair in "1:$dit1" "2:$dit2"; do
  n=${pair%%:*}
  dit=${pair#*:}
  echo "krea2_bench: $n block(s), ggdiff" >&2
  results+=", \"ggdiff_${n}_blocks\": $(ggdiff_run "$dit" "$@")"
  if [ "${REF:-1}" != 0 ] && [ -x "$ref_cli" ]; then
    echo "krea2_bench: $n block(s), reference $ref_cli" >&2
    results+=", \"reference_${n}_blocks\": $(ref_run "$dit")"
  fi
done
results+="}"

python3 "$bench_root/bench/block_estimate.py" "$results" "$blocks" "blocks"
