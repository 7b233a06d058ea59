#!/usr/bin/env bash
# PiD at the real width on this machine's CPU, ggdiff against the reference engine (REF_CLI,
# default /work/ref/sdcpp/build/bin/sd-cli, stable-diffusion.cpp 38a51f81), both on the same
# synthetic files: the released PixelDiT's widths (the golden list tests/fixtures/
# pid_tiny_dit.tensors with the patch MLP at its real 4096: 1536 wide, 24 heads of 64; two pixel
# blocks of 16 features with 1152-wide attention between patches; the 512-wide latent
# projection). The reference takes no fewer than 14 patch blocks (the real depth), so the
# "one-block" run is the real DiT (14 patch blocks) and the "two-block" run has 15 (and one more
# latent head and gate, as every second block has one): one patch block's time is their
# difference, and the whole step is the 14-block run's own time (block_estimate.py over 1 more
# block gives it back). The patch blocks' weights are zeros left as holes on disk (a zero
# matrix costs the same products as a random one), so the files are small on disk; the rest is
# random. f16 weights (the released pid_*_bf16.safetensors are bf16).
# The text encoder is the golden set's 2-layer Gemma 2 at its real width (it runs once, outside
# the step time) with its synthetic tokenizer (tests/golden/pid_tiny/gemma2_tokenizer.json: the
# reference must have been built with it, as the golden set's notes say); the VAE is the FLUX.1
# fixture, the source image the golden set's 64x64 ref_stripes.png.
#  - a SIZE x SIZE output (default 256: 256 patches, 300 text tokens; the 64x64 source is then
#    upscaled 4x as the released 512-to-2048 checkpoints do), cfg 1 (one evaluation per step),
#    euler, STEPS steps (default 3).
# Fixtures are made once under FIXTURES (default BUILD_DIR/fixtures; about 2.6 GB each, the zero
# patch blocks left as holes); CLEAN=1 deletes the two DiT files afterwards.
# Each engine's step time: the minimum over the steps after the first (ggdiff-bench's
# step_seconds; the reference's progress-bar rate per step), so STEPS should be 2 or more.
# Prints one JSON object. Environment: BUILD_DIR (default build), FIXTURES, SIZE, STEPS, REF (0:
# skip the reference engine), REF_CLI, THREADS (-t for both engines, default: all cores),
# CLEAN, FIXTURE_PYTHON (a Python with numpy, default /usr/bin/python3). Extra flags go to
# ggdiff-bench.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/fixture.sh"
bench_settings pid_bench 256 3
mkdir -p "$fixtures"
vae=$(make_fixture flux_ae 14)
golden=$bench_root/tests/golden/pid_tiny
tokenizer=$golden/gemma2_tokenizer.json
source_image=$golden/ref_stripes.png

# The golden DiT list at the real patch MLP width with N patch blocks, f16, patch blocks zero:
# real_width OUT N.
real_width() {
  "$python" - "$bench_root/tests/fixtures/pid_tiny_dit.tensors" "$2" >"$1" <<'PY'
import re
import sys
n = int(sys.argv[2])
heads = (n + 1) // 2  # one latent output head and gate per two patch blocks
for line in open(sys.argv[1]):
    if line.startswith("#! f16:"):
        print("#! f16: net.")
        continue
    if line.startswith("#! zero:"):
        print(r"#! zero: patch_blocks\.|latent_proj\.[4-6]\.")
        continue
    if line.startswith("#") or not line.strip():
        print(line, end="")
        continue
    name, shape = line.split()
    if ".mlp_x." in name or ".mlp_y." in name:
        shape = ",".join("4096" if d == "256" else d for d in shape.split(","))
    m = re.match(r"net\.patch_blocks\.(\d+)\.(.*)", name)
    if m:
        if m.group(1) == "0":
            for i in range(n):
                print("net.patch_blocks.%d.%s %s" % (i, m.group(2), shape))
        continue
    m = re.match(r"net\.lq_proj\.(output_heads|gate_modules)\.(\d+)\.(.*)", name)
    if m:
        if m.group(2) == "0":
            for i in range(heads):
                print("net.lq_proj.%s.%d.%s %s" % (m.group(1), i, m.group(3), shape))
        continue
    print(name, shape)
PY
}

fixture() {  # fixture N SEED -> path
  local stem=pid_bench_dit_$1 file
  file="$fixtures/$stem.gguf"
  if [ ! -f "$file" ]; then
    real_width "$fixtures/$stem.tensors" "$1"
    echo "pid_bench: generating $file" >&2
    "$python" "$bench_root/tests/tools/make_gguf_fixture.py" "$fixtures/$stem.tensors" "$file" \
      --seed "$2" >&2
  fi
  echo "$file"
}
dit1=$(fixture 14 181)
dit2=$(fixture 15 181)
llm=$fixtures/pid_tiny_llm.safetensors
if [ ! -f "$llm" ]; then
  echo "pid_bench: generating $llm" >&2
  "$python" "$shared/tools/make_fixture.py" "$bench_root/tests/fixtures/pid_tiny_llm.tensors" \
    "$llm" --seed 82 >&2
fi
prompt="a lovely cat"

ggdiff_run() {  # ggdiff_run DIT [flags...]
  local model=$1
  shift
  "$build_dir/ggdiff-bench" --diffusion-model "$model" --llm "$llm" --vae "$vae" \
    --vae-format flux --llm-tokenizer "$tokenizer" -r "$source_image" -p "$prompt" \
    -W "$size" -H "$size" --steps "$steps" --sampling-method euler --cfg-scale 1 -s 42 \
    -t "$threads" "$@"
}

ref_run() {  # ref_run DIT -> JSON {wall_seconds, sampling_seconds, step_seconds} or {error}
  local model=$1
  ref_timed pid_bench "$steps" 1 \
    "$ref_cli" --diffusion-model "$model" --llm "$llm" --vae "$vae" --vae-format flux \
    -r "$source_image" -p "$prompt" -W "$size" -H "$size" --steps "$steps" \
    --sampling-method euler --cfg-scale 1 -s 42 -t "$threads" -o "$(mktemp -u).png"
}

patches=$(((size / 16) * (size / 16)))
summary=$(block_pair_bench pid "pid, ${size}x${size}: $patches patches; runs of 14 and 15 patch blocks, the 14-block step is the whole step" 1 "$dit1" "$dit2" "$@")
if [ "${CLEAN:-0}" = 1 ]; then
  rm -f "$dit1" "$dit2" "${dit1%.gguf}.tensors" "${dit2%.gguf}.tensors"
fi
echo "$summary"
