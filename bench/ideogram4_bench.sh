#!/usr/bin/env bash
# Ideogram 4 at the real width on this machine's CPU, ggdiff against the reference engine
# (REF_CLI, default /work/ref/sdcpp/build/bin/sd-cli, stable-diffusion.cpp 38a51f81), both on the
# same synthetic files: the DiT's widths (the reference hard-codes them: 4608 wide, 18 heads of
# 256, SwiGLU 12288, adaLN 512, 13 x 4096 text features) with one layer and with two; one layer's
# time is their difference, the rest of the one-layer step (text projection, embedders, final
# layer) is the one-layer time minus it. A whole Ideogram 4 step is that rest + 34 layers.
# The text encoder is the golden set's (Qwen3 36 layers 4096 wide, two of them random, MLP 256).
#  - a SIZE x SIZE output (default 256: 256 image tokens), cfg 1 (one evaluation per step),
#    euler, STEPS steps (default 3), the fixtures' q4_0 matrices (tests/tools/make_gguf_fixture.py;
#    the released model is fp8 / bf16, converted to q8_0 in the reference's docs).
# Fixtures are made once under FIXTURES (default BUILD_DIR/fixtures; about 1.2 GB on disk).
# Each engine's step time: the minimum over the steps after the first (ggdiff-bench's
# step_seconds; the reference's progress-bar rate per step), so STEPS should be 2 or more.
# Prints one JSON object. Environment: BUILD_DIR (default build), FIXTURES, SIZE, STEPS, REF (0:
# skip the reference engine), REF_CLI, THREADS (-t for both engines, default: all cores),
# FIXTURE_PYTHON (a Python with numpy, default /usr/bin/python3). Extra flags go to ggdiff-bench.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/fixture.sh"
bench_settings ideogram4_bench 256 3
blocks=34
mkdir -p "$fixtures"
vae=$(make_fixture flux2_vae 73)

fixture() {  # fixture LIST N SEED -> path: the list with its layers.0 repeated N times
  local stem=ideogram4_bench_${1%%.*}_$2 file
  file="$fixtures/$stem.gguf"
  if [ ! -f "$file" ]; then
    python3 - "$bench_root/tests/fixtures/$1" "$2" >"$fixtures/$stem.tensors" <<'PY'
import sys
n = int(sys.argv[2])
for line in open(sys.argv[1]):
    if line.startswith("layers.0."):
        for i in range(n):
            print(line.replace("layers.0.", "layers.%d." % i, 1), end="")
    else:
        print(line, end="")
PY
    echo "ideogram4_bench: generating $file" >&2
    "${FIXTURE_PYTHON:-/usr/bin/python3}" "$bench_root/tests/tools/make_gguf_fixture.py" \
      "$fixtures/$stem.tensors" "$file.tmp" --seed "$3" >&2 || exit 1
    mv "$file.tmp" "$file"
  fi
  echo "$file"
}
dit1=$(fixture ideogram4_tiny_dit.tensors 1 141)
dit2=$(fixture ideogram4_tiny_dit.tensors 2 141)
llm=$(fixture ideogram4_tiny_llm.tensors 1 143)
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
  ref_timed ideogram4_bench "$steps" 1 \
    "$ref_cli" --diffusion-model "$model" --llm "$llm" --vae "$vae" -p "$prompt" -W "$size" \
    -H "$size" --steps "$steps" --sampling-method euler --cfg-scale 1 -s 42 -t "$threads" \
    -o "$(mktemp -u).png"
}

tokens=$(((size / 16) * (size / 16)))
note="ideogram4, ${size}x${size}: $tokens image tokens"
echo "ideogram4_bench: $note" >&2
results="{\"family\": \"ideogram4\", \"size\": $size, \"steps\": $steps, \"threads\": $threads, \"note\": \"$note\""
for pair in "1:$dit1" "2:$dit2"; do
  n=${pair%%:*}
  dit=${pair#*:}
  echo "ideogram4_bench: $n layer(s), ggdiff" >&2
  results+=", \"ggdiff_${n}_blocks\": $(ggdiff_run "$dit" "$@")"
  if [ "${REF:-1}" != 0 ] && [ -x "$ref_cli" ]; then
    echo "ideogram4_bench: $n layer(s), reference $ref_cli" >&2
    results+=", \"reference_${n}_blocks\": $(ref_run "$dit")"
  fi
done
results+="}"

python3 "$bench_root/bench/block_estimate.py" "$results" "$blocks" "blocks"
