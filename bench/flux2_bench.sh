#!/usr/bin/env bash
# FLUX.2 [klein] on this machine's default device:
#  1. one klein 4B double block and one single block at the real width
#     (bench/flux2_wide_block.tensors: hidden 3072 = 24 heads x 128, SwiGLU MLP 9216, 128 latent
#     channels, text input 384 wide from the flux2_tiny Qwen3 fixture) at 1024x1024, i.e. 4096
#     image tokens + 512 text tokens, cfg 1 (klein is distilled: one evaluation per step),
#     WIDE_STEPS steps (default 2), with the flux2_tiny Qwen3 and the FLUX.2 VAE fixture;
#     then the same with a second single block, so that one single block's time is the
#     difference and one double block's is the rest (the embedders, the shared modulation and
#     the final layer counted with it). Printed: "pair_step_seconds", "single_block_seconds",
#     "double_block_seconds" and "klein4b_step_estimate_seconds" = 5 double + 20 single
#     blocks (the embedders counted five times: a slight overestimate).
#  2. the reference engine (REF_CLI, default /work/ref/sdcpp/build/bin/sd-cli) when it is
#     present and REF is not 0: it reads the depth of a FLUX.2 DiT from its block indices, so
#     it loads the same one-double-one-single file; both engines run it at REF_SIZE (default
#     512: 1024 image tokens; 1024 takes minutes per step on a CPU) for REF_STEPS steps
#     (default 1); the reference's figure is its own "sampling completed, taking" time divided
#     by the steps. If the reference cannot load the file, its error goes to stderr and its
#     entry has no step time.
# Prints one JSON object. Environment: BUILD_DIR (default build), WIDE_SIZE (default 1024),
# WIDE_STEPS, REF, REF_CLI, REF_SIZE, REF_STEPS, THREADS (-t for both engines, default: all
# cores). Extra flags go to ggdiff-bench.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/fixture.sh"
pair_list="$bench_root/bench/flux2_wide_block.tensors"
llm=$(make_fixture flux2_tiny_llm 72)
vae=$(make_fixture flux2_vae 73)
llm_tok="$shared/data/qwen2_synthetic"
threads=${THREADS:-$(nproc)}
if [ ! -x "$build_dir/ggdiff-bench" ]; then
  echo "flux2_bench: $build_dir/ggdiff-bench is missing (cmake --build $build_dir --target ggdiff-bench)" >&2
  exit 1
fi
prompt="a photograph of an astronaut riding a horse"

pair="$build_dir/fixtures/flux2_wide_block.safetensors"
triple_list="$build_dir/fixtures/flux2_wide_1d2s.tensors"
triple="$build_dir/fixtures/flux2_wide_1d2s.safetensors"
if [ ! -f "$pair" ]; then
  echo "bench: generating $pair" >&2
  "$shared/tools/make_fixture.py" "$pair_list" "$pair" --seed 81 >&2
fi
if [ ! -f "$triple" ]; then
  mkdir -p "$build_dir/fixtures"
  # The same list with single_blocks.0 repeated as single_blocks.1.
  sed -n 's/^single_blocks\.0\./single_blocks.1./p' "$pair_list" | cat "$pair_list" - >"$triple_list"
  echo "bench: generating $triple" >&2
  "$shared/tools/make_fixture.py" "$triple_list" "$triple" --seed 81 >&2
fi

ggdiff_run() {  # ggdiff_run DIT SIZE STEPS [flags...]
  local model=$1 size=$2 steps=$3
  shift 3
  "$build_dir/ggdiff-bench" --diffusion-model "$model" --llm "$llm" --vae "$vae" \
    --llm-tokenizer "$llm_tok" -p "$prompt" -W "$size" -H "$size" --steps "$steps" \
    --sampling-method euler --cfg-scale 1 -s 42 -t "$threads" "$@"
}

size=${WIDE_SIZE:-1024}
echo "flux2_bench: one 3072-wide double + single block, ${size}x${size}" >&2
wide=$(ggdiff_run "$pair" "$size" "${WIDE_STEPS:-2}" "$@")
echo "flux2_bench: one double + two single blocks, ${size}x${size}" >&2
wide3=$(ggdiff_run "$triple" "$size" "${WIDE_STEPS:-2}" "$@")
results="{\"wide_pair\": $wide, \"wide_1d2s\": $wide3"

ref_cli=${REF_CLI:-/work/ref/sdcpp/build/bin/sd-cli}
if [ "${REF:-1}" != 0 ] && [ -x "$ref_cli" ]; then
  ref_size=${REF_SIZE:-512}
  ref_steps=${REF_STEPS:-1}
  echo "flux2_bench: block pair, ${ref_size}x${ref_size}, ggdiff" >&2
  ours=$(ggdiff_run "$pair" "$ref_size" "$ref_steps" "$@")
  echo "flux2_bench: block pair, ${ref_size}x${ref_size}, reference $ref_cli" >&2
  log=$(mktemp)
  start=$(date +%s.%N)
  "$ref_cli" --diffusion-model "$pair" --llm "$llm" --vae "$vae" -p "$prompt" \
    -W "$ref_size" -H "$ref_size" --steps "$ref_steps" --sampling-method euler --cfg-scale 1 \
    -s 42 -t "$threads" -o "$(mktemp -u).png" \
    >"$log" 2>&1 || { tail -20 "$log" >&2; echo "flux2_bench: the reference failed" >&2; }
  end=$(date +%s.%N)
  ref=$(python3 - "$log" "$start" "$end" "$ref_steps" <<'PY'
import json, re, sys
text = open(sys.argv[1], errors="replace").read()
m = re.search(r"sampling completed, taking ([\d.]+)s", text)
steps = int(sys.argv[4])
out = {"wall_seconds": round(float(sys.argv[3]) - float(sys.argv[2]), 1)}
if m:
    out["sampling_seconds"] = float(m.group(1))
    out["step_seconds"] = round(float(m.group(1)) / steps, 3)
print(json.dumps(out))
PY
)
  rm -f "$log"
  results+=", \"pair_at_ref_size\": {\"size\": $ref_size, \"steps\": $ref_steps, \"ggdiff\": $ours, \"reference\": $ref}"
fi
results+="}"
python3 - "$results" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
def step(run):
    s = run["step_seconds"][1:] or run["step_seconds"]  # the first step also allocates
    return sum(s) / len(s)
pair, three = step(r["wide_pair"]), step(r["wide_1d2s"])
single = max(three - pair, 0.0)
double = pair - single
r["pair_step_seconds"] = round(pair, 3)
r["single_block_seconds"] = round(single, 3)
r["double_block_seconds"] = round(double, 3)
r["klein4b_step_estimate_seconds"] = round(5 * double + 20 * single, 1)
f = r.get("pair_at_ref_size")
if f:
    ours = min(f["ggdiff"]["step_seconds"])
    f["ggdiff_step_seconds"] = round(ours, 3)
    ref = f["reference"].get("step_seconds")
    if ref:
        f["reference_over_ggdiff"] = round(ref / ours, 2)
print(json.dumps(r, indent=1))
PY
