#!/usr/bin/env bash
# MiniT2I at the real width on this machine's CPU, ggdiff against the reference engine (REF_CLI,
# default /work/ref/sdcpp/build/bin/sd-cli, stable-diffusion.cpp 38a51f81), both on the same
# synthetic files: minit2i-b-16's DiT widths (768 wide, 12 heads of 64, SwiGLU 2048, text stream
# 768 wide with its 2 preamble blocks, 16x16 patches through a 128-channel bottleneck) with one
# double block and with two; one block's time is their difference, the rest of the one-block
# step (embedders, text preamble, final layer) is the one-block time minus it. A whole MiniT2I
# step is that rest + 17 blocks. The T5 is the golden set's tiny one (64 wide: txt_embedder
# reads 64 features instead of flan-t5-large's 1024, a negligible part of the step).
#  - a SIZE x SIZE output (default 512: 1024 image tokens, 256 prompt tokens), cfg 1 (one
#    evaluation per step), euler, STEPS steps (default 3), weights in f32 (--type f32 for both:
#    the reference fails on the fixture's f16 mask_token; the published file is f32).
# Fixtures are made once under FIXTURES (default BUILD_DIR/fixtures; about 70 MB in all).
# Each engine's step time: the minimum over the steps after the first (ggdiff-bench's
# step_seconds; the reference's progress-bar rate per step), so STEPS should be 2 or more.
# Prints one JSON object. Environment: BUILD_DIR (default build), FIXTURES, SIZE, STEPS, REF (0:
# skip the reference engine), REF_CLI, THREADS (-t for both engines, default: all cores). Extra
# flags go to ggdiff-bench.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/fixture.sh"
bench_settings minit2i_bench 512 3
blocks=17
mkdir -p "$fixtures"
t5=$(make_fixture flux_tiny_t5 13)

# The real-width DiT with N double blocks: the golden fixture's list with its widths replaced.
real_width_dit() {  # real_width_dit N -> path
  local n=$1 list="$fixtures/minit2i_bench_${1}blocks.tensors"
  local file="$fixtures/minit2i_bench_${1}blocks.safetensors"
  if [ ! -f "$file" ]; then
    python3 - "$bench_root/tests/fixtures/minit2i_tiny_dit.tensors" "$n" >"$list" <<'PY'
import sys
# tiny -> real: width 128 -> 768, text 96 -> 768, bottleneck 32 -> 128, SwiGLU 344 / 256 -> 2048
# (768 * 2.6667 rounded up to 8), q/k/v 384 -> 2304; T5 width (64), patch (16), head (64) kept.
sizes = {"128": "768", "96": "768", "32": "128", "344": "2048", "256": "2048", "384": "2304"}
n = int(sys.argv[2])
for line in open(sys.argv[1]):
    if line.startswith("#") or not line.strip():
        print(line, end="")
        continue
    name, shape = line.split()
    if name.startswith("model.net.t_embedder.mlp.0.weight"):
        print(name, shape)  # 256 timestep features, not a width
        continue
    dims = [sizes.get(d, d) for d in shape.split(",")]
    if ".double_blocks.0." in name:
        for i in range(n):
            print(name.replace(".double_blocks.0.", ".double_blocks.%d." % i), ",".join(dims))
    elif ".double_blocks." not in name:
        print(name, ",".join(dims))
PY
    echo "minit2i_bench: generating $file" >&2
    "$shared/tools/make_fixture.py" "$list" "$file" --seed 73 >&2
  fi
  echo "$file"
}
dit1=$(real_width_dit 1)
dit2=$(real_width_dit 2)
prompt="a photograph of an astronaut riding a horse"

ggdiff_run() {  # ggdiff_run DIT [flags...]
  local model=$1
  shift
  "$build_dir/ggdiff-bench" --diffusion-model "$model" --t5xxl "$t5" \
    --t5xxl-tokenizer "$shared/data/t5_synthetic" -p "$prompt" -W "$size" -H "$size" \
    --steps "$steps" --sampling-method euler --cfg-scale 1 -s 42 --type f32 -t "$threads" "$@"
}

ref_run() {  # ref_run DIT -> JSON {wall_seconds, sampling_seconds, step_seconds} or {error}
  local model=$1
  ref_timed minit2i_bench "$steps" 1 \
    "$ref_cli" --diffusion-model "$model" --t5xxl "$t5" -p "$prompt" -W "$size" -H "$size" \
    --steps "$steps" --sampling-method euler --cfg-scale 1 -s 42 --type f32 -t "$threads" \
    -o "$(mktemp -u).png"
}

tokens=$(((size / 16) * (size / 16)))
note="minit2i, ${size}x${size}: $tokens image tokens, 256 prompt tokens"
echo "minit2i_bench: $note" >&2
results="{\"family\": \"minit2i\", \"size\": $size, \"steps\": $steps, \"threads\": $threads, \"note\": \"$note\""
for pair in "1:$dit1" "2:$dit2"; do
  n=${pair%%:*}
  dit=${pair#*:}
  echo "minit2i_bench: $n double block(s), ggdiff" >&2
  results+=", \"ggdiff_${n}_blocks\": $(ggdiff_run "$dit" "$@")"
  if [ "${REF:-1}" != 0 ] && [ -x "$ref_cli" ]; then
    echo "minit2i_bench: $n double block(s), reference $ref_cli" >&2
    results+=", \"reference_${n}_blocks\": $(ref_run "$dit")"
  fi
done
results+="}"

python3 "$bench_root/bench/block_estimate.py" "$results" "$blocks" "double blocks"
