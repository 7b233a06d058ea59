#!/usr/bin/env bash
# The prepared check for a machine with an NVIDIA GPU (docs/gpu.md): builds ggdiff with ggml's
# CUDA backend from source into BUILD_DIR (default build-cuda), then
#  1. lists the devices;
#  2. runs the GPU tests of tests/cli/gpu_backend_e2e_test.cpp (the sd1_mc32 golden case on
#     CUDA0 alone, the UNet split by layers over CUDA0 and the CPU);
#  3. places the same case three more ways and compares each image with the CUDA0-alone one:
#     layer split CUDA0&CPU for every module, row split on CUDA split buffers
#     (--split-mode row over the CUDA devices), and --auto-fit with the GPU's real free memory
#     (its plan printed);
#  4. prints absolute step times on random weights at the real widths, on CUDA0 and on the CPU:
#     SD1.5 at 512x512 (the sd1_mc320 fixture), SDXL at 1024x1024 (bench/sdxl_wide_list.py:
#     2.6B-parameter UNet), FLUX.1 at 1024x1024 (one double + one single block and one double
#     + two single blocks: the whole 19 + 38 block step extrapolated).
# Everything it prints is also in OUT (default $OUT, else /tmp/ggdiff-device-check). It needs
# nvcc, git access to github.com (ggml), the Debian packages of scripts/setup.sh (run
# `scripts/setup.sh` first, or GGDIFF_SKIP_APT=1 where they are installed) and python3 with
# numpy. Budget: the CUDA build is the long part (about 5 minutes on 16 cores for one
# architecture); CPU figures are timed at 1 step.
# Environment: BUILD_DIR, OUT, JOBS (default nproc), CUDA_ARCH (default native), STEPS (GPU
# steps, default 4), SKIP_BUILD=1 (reuse BUILD_DIR).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${BUILD_DIR:-$here/build-cuda}"
out="${OUT:-/tmp/ggdiff-device-check}"
jobs="${JOBS:-$(nproc)}"
steps="${STEPS:-4}"
mkdir -p "$out"
log="$out/device_check.log"
exec > >(tee -a "$log") 2>&1
shared="$here/../shared"
say() { echo "== device_check: $*"; }

if ! command -v nvcc >/dev/null && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "device_check: nvcc not found (install the CUDA toolkit, or add /usr/local/cuda/bin to PATH)" >&2
  exit 1
fi
export PATH="$PATH:/usr/local/cuda/bin"

if [ "${SKIP_BUILD:-0}" != 1 ]; then
  say "building with CUDA into $build_dir ($jobs jobs)"
  start=$(date +%s)
  cmake -S "$here" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DGGDIFF_GGML_FROM_SOURCE=ON \
    -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-native}"
  cmake --build "$build_dir" -j "$jobs" --target ggdiff ggdiff-rpc ggdiff-bench test_cli
  say "build took $(($(date +%s) - start)) s"
fi
ggdiff="$build_dir/ggdiff"
bench="$build_dir/ggdiff-bench"

say "devices"
"$ggdiff" --list-devices
gpu=$("$ggdiff" --list-devices | awk -F'\t' '$1 ~ /^CUDA/ { print $1 }' | head -n 1)
if [ -z "$gpu" ]; then
  echo "device_check: no CUDA device listed" >&2
  exit 1
fi
gpus=$("$ggdiff" --list-devices | awk -F'\t' '$1 ~ /^CUDA/ { print $1 }' | paste -sd'&')

# The fixture of the sd1_mc32 golden set (made once, as the tests make it).
fixtures="$build_dir/fixtures"
mkdir -p "$fixtures"
sd1="$fixtures/sd1_mc32.safetensors"
if [ ! -f "$sd1" ]; then
  python3 "$shared/tools/make_fixture.py" "$shared/fixtures/sd1_mc32.tensors" "$sd1" --seed 1
fi

say "GPU tests (tests/cli/gpu_backend_e2e_test.cpp)"
"$build_dir/tests/test_cli" --gtest_filter='GpuBackend.*' || echo "device_check: GPU tests FAILED"

case_args=(-m "$sd1" --tokenizer "$shared/data/clip/merges.txt" -p
  "a photograph of an astronaut riding a horse" -W 64 -H 64 --steps 4 --sampling-method euler
  --cfg-scale 7 -s 42)
compare() {  # compare A B WHAT
  python3 - "$1" "$2" "$3" <<'PY'
import sys
import numpy as np
from PIL import Image
a, b = (np.asarray(Image.open(p).convert("RGB"), dtype=np.float64) for p in sys.argv[1:3])
d = float(np.abs(a - b).mean()) if a.shape == b.shape else 999.0
print("%-40s mean_abs_diff %.3f %s" % (sys.argv[3], d, "ok" if d <= 1.5 else "FAIL"))
PY
}
say "placements of the golden case (each against $gpu alone)"
"$ggdiff" "${case_args[@]}" --backend "$gpu" -o "$out/alone.png"
compare "$out/alone.png" "$shared/golden/sd1_mc32/euler.png" "$gpu alone vs the golden image"
"$ggdiff" "${case_args[@]}" --backend "all=$gpu&CPU" --split-mode layer -v -o "$out/layer.png" \
  >"$out/layer.log" 2>&1 || echo "device_check: layer split FAILED (see $out/layer.log)"
compare "$out/layer.png" "$out/alone.png" "layer split $gpu&CPU"
"$ggdiff" "${case_args[@]}" --backend "all=$gpus" --split-mode row -v -o "$out/row.png" \
  >"$out/row.log" 2>&1 || echo "device_check: row split FAILED (see $out/row.log)"
grep -E "row split|split buffer|falls back" "$out/row.log" | head -n 5 || true
compare "$out/row.png" "$out/alone.png" "row split over $gpus"
"$ggdiff" "${case_args[@]}" --auto-fit --fit-dry-run >"$out/plan.json" 2>"$out/plan.log" || true
python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); print(json.dumps({k: p[k] for k in ("devices", "components") if k in p}, indent=1))' \
  "$out/plan.json" || cat "$out/plan.log"
"$ggdiff" "${case_args[@]}" --auto-fit -o "$out/autofit.png" >"$out/autofit.log" 2>&1 ||
  echo "device_check: auto-fit FAILED (see $out/autofit.log)"
compare "$out/autofit.png" "$out/alone.png" "--auto-fit (the GPU's free memory)"

# Absolute times on random weights at the real widths, ggdiff-bench on the GPU (STEPS steps)
# and on the CPU (1 step): the minimum step time of each run.
say "step times at the real widths (random weights)"
BUILD_DIR="$build_dir"
source "$here/bench/fixture.sh"
source "$here/bench/flux_wide_fixture.sh"
sd15=$(make_fixture sd1_mc320 2)
sdxl_list="$build_dir/fixtures/sdxl_wide.tensors"
sdxl="$build_dir/fixtures/sdxl_wide.safetensors"
[ -f "$sdxl_list" ] || python3 "$here/bench/sdxl_wide_list.py" "$shared/fixtures/sdxl_mc32.tensors" >"$sdxl_list"
[ -f "$sdxl" ] || python3 "$shared/tools/make_fixture.py" "$sdxl_list" "$sdxl" --seed 31
flux_t5=$(flux_wide_t5)
flux_clip=$(make_fixture flux_clip_l 12)
flux_vae=$(make_fixture flux_ae 14)
flux_pair=$(wide_fixture flux_wide_1d1s 1 1)
flux_three=$(wide_fixture flux_wide_1d2s 1 2)
step_time() {  # step_time NAME DEVICE STEPS ggdiff-bench args... -> prints and records seconds
  local name=$1 dev=$2 s=$3
  shift 3
  "$bench" "$@" --steps "$s" --sampling-method euler -s 1 --backend "$dev" \
    >"$out/$name.json" 2>"$out/$name.err" || { tail -n 5 "$out/$name.err"; echo nan; return; }
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["min_step_seconds"])' "$out/$name.json"
}
prompt="a photograph of an astronaut riding a horse"
flux_prompt=$(python3 -c 'print(" ".join(["a photograph of an astronaut riding a horse"] * 40))')
summary="$out/times.txt"
: >"$summary"
for dev in "$gpu" CPU; do
  s=$steps
  [ "$dev" = CPU ] && s=1
  t=$(step_time "sd15_$dev" "$dev" "$s" -m "$sd15" --tokenizer "$shared/data/clip/merges.txt" \
    -p "$prompt" -W 512 -H 512 --cfg-scale 7)
  echo "$dev SD1.5 512x512 (cfg 7: two UNet passes): $t s/step" | tee -a "$summary"
  t=$(step_time "sdxl_$dev" "$dev" "$s" -m "$sdxl" --tokenizer "$shared/data/clip/merges.txt" \
    -p "$prompt" -W 1024 -H 1024 --cfg-scale 5)
  echo "$dev SDXL 1024x1024 (cfg 5: two UNet passes): $t s/step" | tee -a "$summary"
  flux=(--clip_l "$flux_clip" --t5xxl "$flux_t5" --vae "$flux_vae" --tokenizer
    "$shared/data/clip/merges.txt" --t5xxl-tokenizer "$shared/data/t5_synthetic/tokenizer.json"
    -p "$flux_prompt" -W 1024 -H 1024)
  a=$(step_time "flux_1d1s_$dev" "$dev" "$s" --diffusion-model "$flux_pair" "${flux[@]}")
  c=$(step_time "flux_1d2s_$dev" "$dev" "$s" --diffusion-model "$flux_three" "${flux[@]}")
  python3 - "$dev" "$a" "$c" <<'PY' | tee -a "$summary"
import sys
dev, a, c = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
single = c - a  # one single block; a FLUX.1 double block costs about as much
print("%s FLUX.1 1024x1024 (one evaluation per step): block pair %.3f s, single block %.3f s, "
      "19 double + 38 single blocks estimated at %.2f s/step" % (dev, a, single, a + 55 * single))
PY
done
say "done; everything is in $out"
