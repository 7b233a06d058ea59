#!/usr/bin/env bash
# FLUX.1 Kontext (an image edit: one reference image) at the real FLUX.1 width on this machine's
# CPU, ggdiff against the reference engine (REF_CLI, default /work/ref/sdcpp/build/bin/sd-cli,
# stable-diffusion.cpp 38a51f81), both on the same synthetic files:
#  - DiTs of hidden 3072 (24 heads of 128, MLP 12288; bench/flux_wide_fixture.sh): one double +
#    one single block, and one double + two single blocks, so that one single block's time is
#    the difference and one double block's the rest (the embedders and the final layer counted
#    with it); the whole-step estimate of FLUX.1 Kontext dev is 19 double + 38 single blocks.
#  - a SIZE x SIZE output (default 1024) with one SIZE x SIZE reference image: (SIZE/16)^2 image
#    tokens + as many reference tokens (8192 at 1024) + 512 text tokens (a prompt of two T5
#    chunks), cfg 1 (one evaluation per step), euler, STEPS steps (default 1).
#  - a 1-block T5 stand-in of width 4096 (64 heads), CLIP-L and the VAE of flux_tiny.
# A 1024 step of one block pair takes minutes on a 2-core machine: SIZE=512 (2048 image tokens
# with the reference) is the quick run; the output says which size ran.
# Each engine's step time: ggdiff-bench's step_seconds (the minimum over the steps); the
# reference's "sampling completed, taking" time divided by the steps. The reference's reference
# image encode is outside that time; ggdiff's too (it happens before sampling).
# Prints one JSON object. Environment: BUILD_DIR (default build), SIZE, STEPS, REF (0: skip the
# reference engine), REF_CLI, THREADS (-t for both engines, default: all cores). Extra flags go
# to ggdiff-bench.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/fixture.sh"
source "$(dirname "${BASH_SOURCE[0]}")/flux_wide_fixture.sh"
size=${SIZE:-1024}
steps=${STEPS:-1}
threads=${THREADS:-$(nproc)}
ref_cli=${REF_CLI:-/work/ref/sdcpp/build/bin/sd-cli}
if [ ! -x "$build_dir/ggdiff-bench" ]; then
  echo "kontext_bench: $build_dir/ggdiff-bench is missing (cmake --build $build_dir --target ggdiff-bench)" >&2
  exit 1
fi

t5=$(flux_wide_t5_heads)
clip=$(make_fixture flux_clip_l 12)
vae=$(make_fixture flux_ae 14)
d1s1=$(wide_fixture flux_wide_1d1s 1 1)
d1s2=$(wide_fixture flux_wide_1d2s 1 2)

# The reference image: a smooth colour pattern, SIZE x SIZE RGB (written with zlib alone).
ref_png="$build_dir/fixtures/kontext_bench_ref_${size}.png"
if [ ! -f "$ref_png" ]; then
  python3 - "$ref_png" "$size" <<'PY'
import struct, sys, zlib
path, n = sys.argv[1], int(sys.argv[2])
rows = bytearray()
for y in range(n):
    rows.append(0)
    for x in range(n):
        rows += bytes(((x * 255) // n, (y * 255) // n, ((x + y) * 127) // n))
def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", n, n, 8, 2, 0, 0, 0))
png += chunk(b"IDAT", zlib.compress(bytes(rows), 6)) + chunk(b"IEND", b"")
open(path, "wb").write(png)
PY
fi

# 40 x 9 words: 360 T5 tokens + EOS -> two 256-token chunks = 512 text tokens.
prompt=$(python3 -c 'print(" ".join(["a photograph of an astronaut riding a horse"] * 40))')

ggdiff_run() {  # ggdiff_run DIT [flags...]
  local model=$1
  shift
  "$build_dir/ggdiff-bench" --diffusion-model "$model" --clip_l "$clip" --t5xxl "$t5" \
    --vae "$vae" --tokenizer "$shared/data/clip/merges.txt" \
    --t5xxl-tokenizer "$shared/data/t5_synthetic/tokenizer.json" -p "$prompt" -W "$size" \
    -H "$size" -r "$ref_png" --steps "$steps" --sampling-method euler --cfg-scale 1 -s 42 \
    -t "$threads" "$@"
}

ref_run() {  # ref_run DIT -> JSON {wall_seconds, sampling_seconds, step_seconds} or {error}
  local model=$1
  ref_timed kontext_bench "$steps" 0 \
    "$ref_cli" --diffusion-model "$model" --clip_l "$clip" --t5xxl "$t5" --vae "$vae" \
    -p "$prompt" -W "$size" -H "$size" -r "$ref_png" --steps "$steps" \
    --sampling-method euler --cfg-scale 1 -s 42 -t "$threads" -o "$(mktemp -u).png"
}

tokens=$(((size / 16) * (size / 16)))
note="${size}x${size} output + one ${size}x${size} reference: $tokens image + $tokens reference + 512 text tokens"
[ "$size" -lt 1024 ] && note+=" (run below 1024x1024: at 1024 one step of a block pair takes minutes on this machine)"
echo "kontext_bench: $note" >&2
results="{\"size\": $size, \"steps\": $steps, \"threads\": $threads, \"note\": \"$note\""
for dit in "$d1s1" "$d1s2"; do
  name=$(basename "$dit" .safetensors)
  echo "kontext_bench: $name, ggdiff" >&2
  results+=", \"ggdiff_$name\": $(ggdiff_run "$dit" "$@")"
  if [ "${REF:-1}" != 0 ] && [ -x "$ref_cli" ]; then
    echo "kontext_bench: $name, reference $ref_cli" >&2
    results+=", \"reference_$name\": $(ref_run "$dit")"
  fi
done
results+="}"

python3 - "$results" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
def blocks(pair, three):
    single = max(three - pair, 0.0)
    double = pair - single
    return {
        "pair_step_seconds": round(pair, 3),
        "double_block_seconds": round(double, 3),
        "single_block_seconds": round(single, 3),
        "kontext_dev_step_estimate_seconds_19d_38s": round(19 * double + 38 * single, 1),
    }
summary = {}
summary["ggdiff"] = blocks(min(r["ggdiff_flux_wide_1d1s"]["step_seconds"]),
                           min(r["ggdiff_flux_wide_1d2s"]["step_seconds"]))
ref_pair = r.get("reference_flux_wide_1d1s", {}).get("step_seconds")
ref_three = r.get("reference_flux_wide_1d2s", {}).get("step_seconds")
if ref_pair and ref_three:
    summary["reference"] = blocks(ref_pair, ref_three)
    summary["reference_over_ggdiff_pair"] = round(ref_pair / summary["ggdiff"]["pair_step_seconds"], 2)
    summary["reference_over_ggdiff_estimate"] = round(
        summary["reference"]["kontext_dev_step_estimate_seconds_19d_38s"]
        / max(summary["ggdiff"]["kontext_dev_step_estimate_seconds_19d_38s"], 1e-9), 2)
r["summary"] = summary
print(json.dumps(r, indent=1))
PY
