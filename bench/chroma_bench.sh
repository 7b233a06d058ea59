#!/usr/bin/env bash
# Chroma at the real width on this machine's CPU, ggdiff against the reference engine (REF_CLI,
# default /work/ref/sdcpp/build/bin/sd-cli, stable-diffusion.cpp 38a51f81), both on the same
# synthetic files:
#  - Chroma DiTs of hidden 3072 (24 heads of 128, MLP 12288, T5 context 4096; FLUX.1's blocks
#    without modulation linears) with the real approximator (distilled_guidance_layer: 64 ->
#    5120, 5 residual layers of 5120, -> 3072, evaluated on its 344 modulation rows every step):
#    one double + one single block, and one double + two single blocks: one single block's
#    time is their difference; the rest of the pair's step (one double block plus the
#    approximator, the embedders and the final layer, which two files cannot separate) is split
#    between the double block and the rest by their FLOPs. The whole-step estimate of Chroma
#    (Chroma1-HD) is the rest + 19 double + 38 single blocks; on a busy machine the difference of
#    two runs is noise, so the summary also scales the pair's time by the whole step's FLOPs
#    over the pair's (a single block does the same products as a double one).
#  - a SIZE x SIZE output (default 1024: 4096 image tokens) with 512 text tokens (Chroma always
#    pads T5 to 512), cfg 1 (one evaluation per step), euler, STEPS steps (default 1), the DiT
#    mask on (both engines' default).
#  - a 1-block T5 stand-in of width 4096 (64 heads) and flux_tiny's VAE.
# Fixtures (deterministic random weights, about 1.3 GB each) are made once under FIXTURES
# (default BUILD_DIR/fixtures).
# Each engine's step time: ggdiff-bench's step_seconds (the minimum over the steps); the
# reference's "sampling completed, taking" time divided by the steps.
# Prints one JSON object. Environment: BUILD_DIR (default build), FIXTURES, SIZE, STEPS, REF (0:
# skip the reference engine), REF_CLI, THREADS (-t for both engines, default: all cores). Extra
# flags go to ggdiff-bench.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/fixture.sh"
bench_settings chroma_bench 1024 1
mkdir -p "$fixtures"

# FILE.tensors (a make_fixture.py list) -> FILE.safetensors, once.
make_list_fixture() {  # make_list_fixture NAME SEED; the list is on stdin
  local list="$fixtures/$1.tensors" file="$fixtures/$1.safetensors"
  [ -f "$list" ] || cat >"$list"
  if [ ! -f "$file" ]; then
    echo "chroma_bench: generating $file" >&2
    "$shared/tools/make_fixture.py" "$list" "$file" --seed "$2" >&2
  fi
  echo "$file"
}

chroma_dit() {  # chroma_dit DOUBLES SINGLES -> path
  local name="chroma_wide_${1}d${2}s"
  python3 - "$1" "$2" <<'PY' | make_list_fixture "$name" 31
import sys
doubles, singles = int(sys.argv[1]), int(sys.argv[2])
H, M, D, CTX, IN, A = 3072, 12288, 128, 4096, 64, 5120
lines = ["# Chroma width, %d double + %d single blocks, real approximator (bench/chroma_bench.sh)"
         % (doubles, singles)]
def lin(name, o, i):
    lines.append("%s.weight %d,%d" % (name, o, i))
    lines.append("%s.bias %d" % (name, o))
lin("img_in", H, IN)
lin("txt_in", H, CTX)
g = "distilled_guidance_layer."
lin(g + "in_proj", A, 64)
for i in range(5):
    lin(g + "layers.%d.in_layer" % i, A, A)
    lin(g + "layers.%d.out_layer" % i, A, A)
    lines.append(g + "norms.%d.scale %d" % (i, A))
lin(g + "out_proj", H, A)
for b in range(doubles):
    p = "double_blocks.%d." % b
    for s in ("img", "txt"):
        lin(p + s + "_attn.qkv", 3 * H, H)
        lines.append(p + s + "_attn.norm.query_norm.scale %d" % D)
        lines.append(p + s + "_attn.norm.key_norm.scale %d" % D)
        lin(p + s + "_attn.proj", H, H)
        lin(p + s + "_mlp.0", M, H)
        lin(p + s + "_mlp.2", H, M)
for b in range(singles):
    p = "single_blocks.%d." % b
    lin(p + "linear1", 3 * H + M, H)
    lin(p + "linear2", H, H + M)
    lines.append(p + "norm.query_norm.scale %d" % D)
    lines.append(p + "norm.key_norm.scale %d" % D)
lin("final_layer.linear", IN, H)
print("\n".join(lines))
PY
}

# A 1-block T5 of width 4096 with 64 heads of 64 as the real one, FFN 128 and a 512-token
# vocabulary; its cost is not part of a step.
t5=$(make_list_fixture chroma_bench_t5 22 <<'T5'
# T5 stand-in of width 4096, 64 heads of 64 (bench/chroma_bench.sh)
encoder.block.0.layer.0.SelfAttention.q.weight 4096,4096
encoder.block.0.layer.0.SelfAttention.k.weight 4096,4096
encoder.block.0.layer.0.SelfAttention.v.weight 4096,4096
encoder.block.0.layer.0.SelfAttention.o.weight 4096,4096
encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight 32,64
encoder.block.0.layer.0.layer_norm.weight 4096
encoder.block.0.layer.1.DenseReluDense.wi_0.weight 128,4096
encoder.block.0.layer.1.DenseReluDense.wi_1.weight 128,4096
encoder.block.0.layer.1.DenseReluDense.wo.weight 4096,128
encoder.block.0.layer.1.layer_norm.weight 4096
encoder.final_layer_norm.weight 4096
shared.weight 512,4096
T5
)
vae=$(make_fixture flux_ae 14)
d1s1=$(chroma_dit 1 1)
d1s2=$(chroma_dit 1 2)

prompt="a photograph of an astronaut riding a horse"

ggdiff_run() {  # ggdiff_run DIT [flags...]
  local model=$1
  shift
  "$build_dir/ggdiff-bench" --diffusion-model "$model" --t5xxl "$t5" --vae "$vae" \
    --t5xxl-tokenizer "$shared/data/t5_synthetic/tokenizer.json" -p "$prompt" -W "$size" \
    -H "$size" --steps "$steps" --sampling-method euler --cfg-scale 1 -s 42 -t "$threads" "$@"
}

ref_run() {  # ref_run DIT -> JSON {wall_seconds, sampling_seconds, step_seconds} or {error}
  local model=$1
  ref_timed chroma_bench "$steps" 0 \
    "$ref_cli" --diffusion-model "$model" --t5xxl "$t5" --vae "$vae" -p "$prompt" -W "$size" \
    -H "$size" --steps "$steps" --sampling-method euler --cfg-scale 1 -s 42 -t "$threads" \
    -o "$(mktemp -u).png"
}

tokens=$(((size / 16) * (size / 16)))
note="${size}x${size}: $tokens image + 512 text tokens, approximator 344 rows x 5120 x 5 layers"
[ "$size" -lt 1024 ] && note+=" (run below 1024x1024: at 1024 one step of a block pair takes minutes on this machine)"
echo "chroma_bench: $note" >&2
results="{\"size\": $size, \"steps\": $steps, \"threads\": $threads, \"note\": \"$note\""
for dit in "$d1s1" "$d1s2"; do
  name=$(basename "$dit" .safetensors)
  echo "chroma_bench: $name, ggdiff" >&2
  results+=", \"ggdiff_$name\": $(ggdiff_run "$dit" "$@")"
  if [ "${REF:-1}" != 0 ] && [ -x "$ref_cli" ]; then
    echo "chroma_bench: $name, reference $ref_cli" >&2
    results+=", \"reference_$name\": $(ref_run "$dit")"
  fi
done
results+="}"

python3 - "$results" "$size" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
size = int(sys.argv[2])
# FLOPs of one step's parts (multiply-adds x 2), to split the pair's time between the double
# block and the rest (approximator, embedders, final layer), which two files cannot separate.
H, M, A, T = 3072, 12288, 5120, 512
N = (size // 16) ** 2
L = N + T
attn = lambda n: 2 * 2 * n * n * H  # QK^T and AV over all heads
double = 2 * (T + N) * (3 * H * H + H * H + 2 * H * M) + attn(L)
rest = 2 * 344 * (64 * A + 10 * A * A + A * H) + 2 * (N * 64 * H + T * 4096 * H + N * H * 64)
single = double  # FLUX.1's single block: the same products over the same tokens
pair_flops = double + single + rest
step_flops = 19 * double + 38 * single + rest
def blocks(pair, three):
    single = max(three - pair, 0.0)
    double_and_rest = pair - single
    d = double_and_rest * double / (double + rest)
    rest_s = double_and_rest - d
    return {
        "pair_step_seconds": round(pair, 3),
        "double_block_seconds": round(d, 3),
        "single_block_seconds": round(single, 3),
        "rest_of_step_seconds": round(rest_s, 3),
        "chroma_step_estimate_seconds_19d_38s": round(rest_s + 19 * d + 38 * single, 1),
        # Robust to a busy machine (the difference of two runs can even come out negative):
        # the pair's time scaled by the whole step's FLOPs over the pair's.
        "chroma_step_estimate_seconds_by_flops": round(pair * step_flops / pair_flops, 1),
    }
summary = {"rest_share_of_pair_flops": round(rest / (double + rest), 4),
           "step_gflop_19d_38s": round(step_flops / 1e9), "pair_gflop": round(pair_flops / 1e9)}
summary["ggdiff"] = blocks(min(r["ggdiff_chroma_wide_1d1s"]["step_seconds"]),
                           min(r["ggdiff_chroma_wide_1d2s"]["step_seconds"]))
ref_pair = r.get("reference_chroma_wide_1d1s", {}).get("step_seconds")
ref_three = r.get("reference_chroma_wide_1d2s", {}).get("step_seconds")
if ref_pair and ref_three:
    summary["reference"] = blocks(ref_pair, ref_three)
    summary["reference_over_ggdiff_pair"] = round(ref_pair / summary["ggdiff"]["pair_step_seconds"], 2)
    summary["reference_over_ggdiff_estimate"] = round(
        summary["reference"]["chroma_step_estimate_seconds_19d_38s"]
        / max(summary["ggdiff"]["chroma_step_estimate_seconds_19d_38s"], 1e-9), 2)
r["summary"] = summary
print(json.dumps(r, indent=1))
PY
