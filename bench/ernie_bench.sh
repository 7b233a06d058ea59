#!/usr/bin/env bash
# ERNIE-Image's DiT at the real width on this machine's CPU, ggdiff against the reference engine
# (REF_CLI, default /work/ref/ernie/build/bin/sd-cli: stable-diffusion.cpp 38a51f81 built with
# the synthetic Mistral vocabulary of tests/fixtures/ernie_synthetic_tokenizer.py, see
# tests/golden/ernie_tiny's notes; a build with the stub vocabulary tokenizes nothing), both on
# the same synthetic files.
#  - DiTs of one and of two layers at ERNIE-Image's width (hidden 4096 = 32 heads of 128, MLP
#    12288, patch 1 on 128 latent channels). One layer's time is their difference; the rest of
#    the one-layer step (embedders, the shared modulation, the final layer) is the remainder.
#    A whole step is the rest + 36 layers.
#  - The text encoder is the ernie_tiny_llm fixture (64 wide, 26 layers), so text_proj takes 64
#    features instead of 3072 (2 x T x 3072 x 4096 multiply-adds less: under 0.1% of a step);
#    the text rows are the prompt's tokens under the synthetic vocabulary (about 40, no padding).
#  - a SIZE x SIZE output (default 512: 1024 image tokens), cfg 1 (one evaluation per step),
#    euler, STEPS steps (default 1); the VAE is FLUX.2's (the flux2_vae fixture).
# Fixtures (deterministic random weights, 0.8 and 1.2 GB) are made once under FIXTURES (default
# BUILD_DIR/fixtures).
# Each engine's step time: ggdiff-bench's step_seconds (the minimum over the steps); the
# reference's "sampling completed, taking" time divided by the steps.
# Prints one JSON object. Environment: BUILD_DIR (default build), FIXTURES, SIZE, STEPS, REF (0:
# skip the reference engine), REF_CLI, THREADS (-t for both engines, default: all cores). Extra
# flags go to ggdiff-bench.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/fixture.sh"
size=${SIZE:-512}
steps=${STEPS:-1}
threads=${THREADS:-$(nproc)}
ref_cli=${REF_CLI:-/work/ref/ernie/build/bin/sd-cli}
fixtures=${FIXTURES:-$build_dir/fixtures}
layers_real=36
if [ ! -x "$build_dir/ggdiff-bench" ]; then
  echo "ernie_bench: $build_dir/ggdiff-bench is missing (cmake --build $build_dir --target ggdiff-bench)" >&2
  exit 1
fi
mkdir -p "$fixtures"

gen() {  # gen LIST OUT SEED: make_fixture.py on a list, once
  if [ ! -f "$2" ]; then
    echo "ernie_bench: generating $2" >&2
    "$shared/tools/make_fixture.py" "$1" "$2" --seed "$3" >&2
  fi
}

wide_dit() {  # wide_dit LAYERS -> path
  local name="ernie_wide_${1}l" list file
  list="$fixtures/$name.tensors"
  file="$fixtures/$name.safetensors"
  if [ ! -f "$list" ]; then
    python3 - "$1" >"$list" <<'PY'
import sys
layers = int(sys.argv[1])
H, M, D, C, TXT = 4096, 12288, 128, 128, 64
out = ["# ERNIE-Image width, %d layer(s) (bench/ernie_bench.sh)" % layers,
       "#! fill: adaLN_sa_ln=1;adaLN_mlp_ln=1"]
t = lambda name, *shape: out.append("%s %s" % (name, ",".join(str(s) for s in shape)))
t("x_embedder.proj.weight", H, C, 1, 1)
t("x_embedder.proj.bias", H)
t("text_proj.weight", H, TXT)
for k in (1, 2):
    t("time_embedding.linear_%d.weight" % k, H, H)
    t("time_embedding.linear_%d.bias" % k, H)
t("adaLN_modulation.1.weight", 6 * H, H)
t("adaLN_modulation.1.bias", 6 * H)
for i in range(layers):
    p = "layers.%d." % i
    t(p + "adaLN_sa_ln.weight", H)
    t(p + "adaLN_mlp_ln.weight", H)
    for q in ("to_q", "to_k", "to_v", "to_out.0"):
        t(p + "self_attention.%s.weight" % q, H, H)
    t(p + "self_attention.norm_q.weight", D)
    t(p + "self_attention.norm_k.weight", D)
    t(p + "mlp.gate_proj.weight", M, H)
    t(p + "mlp.up_proj.weight", M, H)
    t(p + "mlp.linear_fc2.weight", H, M)
t("final_norm.linear.weight", 2 * H, H)
t("final_norm.linear.bias", 2 * H)
t("final_linear.weight", C, H)
t("final_linear.bias", C)
print("\n".join(out))
PY
  fi
  gen "$list" "$file" 35
  echo "$file"
}

llm="$fixtures/ernie_tiny_llm.safetensors"
gen "$bench_root/tests/fixtures/ernie_tiny_llm.tensors" "$llm" 132
vae=$(make_fixture flux2_vae 73)
tokenizer="$bench_root/tests/golden/ernie_tiny/mistral_tokenizer.json"
l1=$(wide_dit 1)
l2=$(wide_dit 2)
prompt="a photograph of an astronaut riding a horse"

ggdiff_run() {  # ggdiff_run DIT [flags...]
  local model=$1
  shift
  "$build_dir/ggdiff-bench" --diffusion-model "$model" --llm "$llm" --vae "$vae" \
    --llm-tokenizer "$tokenizer" -p "$prompt" -W "$size" -H "$size" \
    --steps "$steps" --sampling-method euler --cfg-scale 1 -s 42 -t "$threads" "$@"
}

ref_run() {  # ref_run DIT -> JSON {wall_seconds, sampling_seconds, step_seconds} or {error}
  local model=$1
  ref_timed ernie_bench "$steps" 0 \
    "$ref_cli" --diffusion-model "$model" --llm "$llm" --vae "$vae" -p "$prompt" -W "$size" \
    -H "$size" --steps "$steps" --sampling-method euler --cfg-scale 1 -s 42 -t "$threads" \
    -o "$(mktemp -u).png"
}

tokens=$(((size / 16) * (size / 16)))
note="ernie_image, ${size}x${size}: $tokens image tokens + the prompt's"
echo "ernie_bench: $note" >&2
results="{\"family\": \"ernie_image\", \"size\": $size, \"steps\": $steps, \"threads\": $threads, \"note\": \"$note\""
for dit in "$l1" "$l2"; do
  name=$(basename "$dit" .safetensors)
  echo "ernie_bench: $name, ggdiff" >&2
  results+=", \"ggdiff_$name\": $(ggdiff_run "$dit" "$@")"
  if [ "${REF:-1}" != 0 ] && [ -x "$ref_cli" ]; then
    echo "ernie_bench: $name, reference $ref_cli" >&2
    results+=", \"reference_$name\": $(ref_run "$dit")"
  fi
done
results+="}"

python3 - "$results" "$layers_real" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
layers = int(sys.argv[2])
# The FLOPs ggdiff counts in its sampling phase (the same graphs the reference runs) split a
# step into one layer and the rest; the FLOP-scaled estimate (the two-layer step's time times
# the whole step's FLOPs over its own) holds when the machine is busy, the difference of the
# two runs does not.
def gflop(run):
    return next((p["gflop"] for p in run.get("phases", []) if p.get("name") == "sampling"), None)
g1, g2 = gflop(r["ggdiff_ernie_wide_1l"]), gflop(r["ggdiff_ernie_wide_2l"])
step_gflop = None
if g1 and g2:
    layer_gflop = g2 - g1
    step_gflop = (g1 - layer_gflop) + layers * layer_gflop
def blocks(one, two):
    layer = max(two - one, 0.0)
    rest = one - layer
    out = {
        "one_layer_step_seconds": round(one, 3),
        "two_layer_step_seconds": round(two, 3),
        "layer_seconds": round(layer, 3),
        "rest_of_step_seconds": round(rest, 3),
        "step_estimate_seconds": round(rest + layers * layer, 1),
    }
    if step_gflop:
        out["step_estimate_seconds_by_flops"] = round(two * step_gflop / g2, 1)
    return out
def step(run):
    s = run.get("step_seconds")
    return min(s) if isinstance(s, list) else s
summary = {"whole_step": "%d layers" % layers}
if step_gflop:
    summary["step_gflop"] = round(step_gflop)
    summary["layer_gflop"] = round(g2 - g1, 1)
summary["ggdiff"] = blocks(step(r["ggdiff_ernie_wide_1l"]), step(r["ggdiff_ernie_wide_2l"]))
ref_one = r.get("reference_ernie_wide_1l", {}).get("step_seconds")
ref_two = r.get("reference_ernie_wide_2l", {}).get("step_seconds")
if ref_one and ref_two:
    summary["reference"] = blocks(ref_one, ref_two)
    summary["ggdiff_over_reference_two_layers"] = round(
        summary["ggdiff"]["two_layer_step_seconds"] / ref_two, 3)
r["summary"] = summary
print(json.dumps(r, indent=1))
PY
