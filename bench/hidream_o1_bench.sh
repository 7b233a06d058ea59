#!/usr/bin/env bash
# HiDream-O1-Image at its real size on this machine's CPU, ggdiff against the reference engine
# (REF_CLI, default /work/ref/sdcpp/build/bin/sd-cli, stable-diffusion.cpp 38a51f81), both on
# the golden set's file: tests/fixtures/hidream_o1_full.tensors written by
# tests/tools/make_gguf_fixture.py (the 36-layer, 4096-wide language model in f16, 14.8 GB long
# but sparse: layers 3-35 are zeros, which cost the same time as any weights; the reference only
# takes the real size, so the whole step is measured, not estimated from a block).
#  - a SIZE x SIZE output (default 256: 64 patch tokens of 32x32 pixels, plus the prompt's ~25
#    tokens), cfg 1 (one evaluation per step), euler, STEPS steps (default 2).
# Each engine's step time: ggdiff-bench's step_seconds (the minimum over the steps); the
# reference's "sampling completed, taking" time divided by the steps (its first step also loads
# the weights; ggdiff-bench loads them before it times).
# Prints one JSON object. Environment: BUILD_DIR (default build), FIXTURES (default
# BUILD_DIR/fixtures), SIZE, STEPS, REF (0: skip the reference engine), REF_CLI, THREADS (-t for
# both engines, default: all cores). Extra flags go to ggdiff-bench.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/fixture.sh"
bench_settings hidream_o1_bench 256 2
model="$fixtures/hidream_o1_full.gguf"
if [ ! -f "$model" ]; then
  mkdir -p "$fixtures"
  echo "hidream_o1_bench: generating $model (14.8 GB, 1.5 GB on disk)" >&2
  python3 "$bench_root/tests/tools/make_gguf_fixture.py" \
    "$bench_root/tests/fixtures/hidream_o1_full.tensors" "$model.tmp" --seed 91 >&2
  mv "$model.tmp" "$model"
fi
prompt="a lovely cat holding a sign that says hello"
tokenizer="$shared/data/qwen2_synthetic"

echo "hidream_o1_bench: ggdiff, ${size}x${size}" >&2
ggdiff_json=$("$build_dir/ggdiff-bench" -m "$model" --llm-tokenizer "$tokenizer" -p "$prompt" \
  -W "$size" -H "$size" --steps "$steps" --sampling-method euler --cfg-scale 1 -s 42 \
  -t "$threads" "$@")
ref_json='null'
if [ "${REF:-1}" != 0 ] && [ -x "$ref_cli" ]; then
  echo "hidream_o1_bench: reference $ref_cli" >&2
  log=$(mktemp)
  "$ref_cli" -m "$model" -p "$prompt" -W "$size" -H "$size" --steps "$steps" \
    --sampling-method euler --cfg-scale 1 -s 42 -t "$threads" -o "$(mktemp -u).png" >"$log" 2>&1 ||
    { tail -20 "$log" >&2; echo "hidream_o1_bench: the reference failed" >&2; }
  ref_json=$(python3 - "$log" "$steps" <<'PY'
import json, re, sys
text = open(sys.argv[1], errors="replace").read()
m = re.search(r"sampling completed, taking ([\d.]+)s", text)
steps = int(sys.argv[2])
print(json.dumps({"sampling_seconds": float(m.group(1)), "step_seconds": round(float(m.group(1)) / steps, 3)}
                 if m else {"error": "no 'sampling completed' line"}))
PY
)
  rm -f "$log"
fi
python3 - "$ggdiff_json" "$ref_json" "$size" "$steps" "$threads" <<'PY'
import json, sys
g, r = json.loads(sys.argv[1]), json.loads(sys.argv[2])
size, steps, threads = (int(v) for v in sys.argv[3:6])
out = {"family": "hidream_o1", "size": size, "steps": steps, "threads": threads,
       "note": "whole step of the real-size model (36 layers, 4096 wide, f16): %d patch tokens + the prompt" % ((size // 32) ** 2),
       "ggdiff": g, "reference": r}
gs = g.get("step_seconds") if isinstance(g, dict) else None
rs = r.get("step_seconds") if isinstance(r, dict) else None
if gs and rs:
    out["ggdiff_over_reference"] = round(gs / rs, 3)
print(json.dumps(out))
PY
