#!/usr/bin/env bash
# ggdiff next to PyTorch on the same weights: the full-size SD1.5-layout fixture
# (2.1 GB, seed 2), timed by bench/torch_baseline/sd1_torch.py (our own PyTorch UNet and
# VAE decoder, f32) and by ggdiff-bench at 256x256 and 512x512 (2 steps, euler, cfg 7:
# each step is one UNet evaluation at batch 2). Prints both JSON lines, then a table
# figure | PyTorch | ggdiff | ratio, and whether ggdiff wins on every figure.
# Takes about 5 minutes on 2 cores; figures are noisy on a shared machine.
#
# Usage: bench/torch_baseline.sh [-t THREADS] [--check]
#   -t THREADS  threads for both (default 2)
#   --check     only the PyTorch model's cheap sanity check (shapes, finite, weights)
# Env: BUILD_DIR (ggdiff build, default ./build), GGDIFF_SHARED (default ../shared),
#      PYTHON (a Python 3 with torch and numpy; default: python3, else /usr/bin/python3).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=fixture.sh
source "$here/fixture.sh"

threads=2
check=0
while [ $# -gt 0 ]; do
  case "$1" in
    -t | --threads) threads=${2:?"-t needs a thread count"}; shift 2 ;;
    --check) check=1; shift ;;
    -h | --help) sed -n '2,/^set -e/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "torch_baseline: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

find_python() {
  local candidates=("${PYTHON:-}")
  [ -n "${PYTHON:-}" ] || candidates=(python3 /usr/bin/python3)
  for py in "${candidates[@]}"; do
    if "$py" -c 'import torch, numpy' >/dev/null 2>&1; then echo "$py"; return 0; fi
  done
  return 1
}
if ! python=$(find_python); then
  echo "torch_baseline: PyTorch not found (tried ${PYTHON:-python3 and /usr/bin/python3})." >&2
  echo "torch_baseline: install python3-torch (and python3-numpy), or set PYTHON." >&2
  exit 1
fi

model=$(make_fixture sd1_mc320 2)
torch_cmd=("$python" "$here/torch_baseline/sd1_torch.py" --model "$model" --threads "$threads")
if [ "$check" = 1 ]; then
  exec "${torch_cmd[@]}" --check
fi
if [ ! -x "$build_dir/ggdiff-bench" ]; then
  echo "torch_baseline: $build_dir/ggdiff-bench not found: build it or set BUILD_DIR" >&2
  exit 1
fi

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "torch_baseline: PyTorch, $threads threads" >&2
"${torch_cmd[@]}" >"$out/torch.json"
for size in 256 512; do
  echo "torch_baseline: ggdiff-bench ${size}x${size}, $threads threads" >&2
  "$build_dir/ggdiff-bench" -m "$model" --tokenizer "$shared/data/clip/merges.txt" \
    -p "a photograph of an astronaut riding a horse" -W "$size" -H "$size" --steps 2 \
    --sampling-method euler --cfg-scale 7 -s 2 -t "$threads" >"$out/ggdiff_$size.json"
done
echo "torch:      $(cat "$out/torch.json")"
echo "ggdiff 256: $(cat "$out/ggdiff_256.json")"
echo "ggdiff 512: $(cat "$out/ggdiff_512.json")"
echo
"$python" "$here/torch_baseline/compare.py" "$out/torch.json" "$out/ggdiff_256.json" \
  "$out/ggdiff_512.json"
