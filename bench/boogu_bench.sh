#!/usr/bin/env bash
# Boogu Image at the real width on this machine's CPU, ggdiff against the reference engine
# (REF_CLI, default /work/ref/sdcpp/build/bin/sd-cli, stable-diffusion.cpp 38a51f81), both on
# the same synthetic files: the released DiT's widths (3360 wide, 28 heads of 120 with 7
# key/value heads, FFN 13568, timestep embedding 1024) with one context / noise / reference
# refiner, one double-stream layer (the reference builds all of them; it needs at least one of
# each refiner) and one or two single-stream layers; one single-stream layer's time is the
# difference, the rest of the one-layer step is the one-layer time minus it. A whole Boogu step
# (32 single + 8 double layers, 2 of each refiner) is that rest plus 53 single-layer
# equivalents: 32 single layers, 7 more double layers at about 2.4 single layers each (their
# weights: two feed-forwards, joint and self attention, five modulations) and 3 more refiners.
# The text encoder is the golden set's tiny Qwen3 (512 wide: the caption embedder reads 512
# features instead of Qwen3-VL-8B's 4096, a negligible part of the step); the VAE is FLUX's.
#  - a SIZE x SIZE output (default 256: 256 image tokens, about 40 prompt tokens), cfg 1 (one
#    evaluation per step), euler, STEPS steps (default 2), weights in f16 as generated.
# Fixtures are made once under FIXTURES (default BUILD_DIR/fixtures; about 5 GB in all).
# Each engine's step time: the minimum over the steps after the first (ggdiff-bench's
# step_seconds; the reference's progress-bar rate per step), so STEPS should be 2 or more.
# Prints one JSON object. Environment: BUILD_DIR (default build), FIXTURES, SIZE, STEPS, REF (0:
# skip the reference engine), REF_CLI, THREADS (-t for both engines, default: all cores). Extra
# flags go to ggdiff-bench.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/fixture.sh"
bench_settings boogu_bench 256 2
blocks=53
mkdir -p "$fixtures"
llm=$(make_fixture zimage_tiny_llm 52)
vae=$(make_fixture flux_ae 14)

# The real-width DiT with N single-stream layers: the golden fixture's list with its widths
# replaced (by role where the tiny widths coincide).
real_width_dit() {  # real_width_dit N -> path
  local n=$1 list="$fixtures/boogu_bench_${1}layers.tensors"
  local file="$fixtures/boogu_bench_${1}layers.safetensors"
  if [ ! -f "$file" ]; then
    python3 - "$bench_root/tests/fixtures/boogu_tiny_dit.tensors" "$n" >"$list" <<'PY'
import re
import sys
# tiny -> real: width 96 -> 3360, key/value rows 48 -> 840, heads 24 -> 120, FFN 512 -> 13568,
# modulation 4 x 96 -> 4 x 3360; the timestep width (96 in the tiny model: min(width, 1024))
# -> 1024 where a tensor reads or makes it; the caption width (512) and patches (64) kept.
width = {"96": "3360", "48": "840", "24": "120", "512": "13568", "384": "13440"}
n = int(sys.argv[2])
for line in open(sys.argv[1]):
    if line.startswith("#") or not line.strip():
        print(line, end="")
        continue
    name, shape = line.split()
    dims = shape.split(",")
    if "timestep_embedder." in name:
        dims = ["1024" if d == "96" else d for d in dims]
    elif re.search(r"norm\d?\.linear\.|norm_out\.linear_1\.", name):
        dims = [width.get(dims[0], dims[0])] + (["1024"] if len(dims) > 1 else [])
    elif "caption_embedder" in name:
        dims = ["3360" if d == "96" else d for d in dims]
    else:
        dims = [width.get(d, d) for d in dims]
    m = re.match(r"single_stream_layers\.(\d+)\.", name)
    if m and int(m.group(1)) >= n:
        continue
    print(name, ",".join(dims))
PY
    echo "boogu_bench: generating $file" >&2
    "$shared/tools/make_fixture.py" "$list" "$file" --seed 63 >&2
  fi
  echo "$file"
}
dit1=$(real_width_dit 1)
dit2=$(real_width_dit 2)
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
  ref_timed boogu_bench "$steps" 1 \
    "$ref_cli" --diffusion-model "$model" --llm "$llm" --vae "$vae" -p "$prompt" -W "$size" \
    -H "$size" --steps "$steps" --sampling-method euler --cfg-scale 1 -s 42 -t "$threads" \
    -o "$(mktemp -u).png"
}

tokens=$(((size / 16) * (size / 16)))
note="boogu_image, ${size}x${size}: $tokens image tokens"
echo "boogu_bench: $note" >&2
results="{\"family\": \"boogu_image\", \"size\": $size, \"steps\": $steps, \"threads\": $threads, \"note\": \"$note\""
for pair in "1:$dit1" "2:$dit2"; do
  n=${pair%%:*}
  dit=${pair#*:}
  echo "boogu_bench: $n single-stream layer(s), ggdiff" >&2
  results+=", \"ggdiff_${n}_blocks\": $(ggdiff_run "$dit" "$@")"
  if [ "${REF:-1}" != 0 ] && [ -x "$ref_cli" ]; then
    echo "boogu_bench: $n single-stream layer(s), reference $ref_cli" >&2
    results+=", \"reference_${n}_blocks\": $(ref_run "$dit")"
  fi
done
results+="}"

python3 "$bench_root/bench/block_estimate.py" "$results" "$blocks" "single-stream layer equivalents"
