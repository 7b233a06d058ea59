#!/usr/bin/env bash
# FLUX.1 block cost at the real width (hidden 3072, 24 heads of 128, MLP 12288, T5 context
# 4096), timed at 512x512 (1024 image tokens) with 512 text tokens (a prompt of two T5
# chunks), so that a real FLUX.1-dev step (19 double + 38 single blocks) can be
# extrapolated. Three synthetic DiTs (deterministic random weights, made once under
# build/fixtures/): 1 double + 1 single, 2 double + 1 single, 1 double + 2 single blocks;
# per-block time = the difference of their step times. The T5 is a 1-block stand-in of
# width 4096 (its cost is not part of a step); CLIP-L and the VAE are flux_tiny's.
# Runs --type f16 (weights kept in f16, widened block by block in the products) and
# --type q8_0.
# Prints one JSON object: per run the step times, and per type the double-block,
# single-block and rest-of-step seconds and the extrapolated 19+38 block step.
# Environment: BUILD_DIR (default build), STEPS (default 2). Extra flags go to ggdiff-bench.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/fixture.sh"
steps=${STEPS:-2}

# Writes build/fixtures/NAME.tensors (if missing) and the fixture from it.
wide_fixture() {
  local name=$1 doubles=$2 singles=$3 list="$build_dir/fixtures/$1.tensors"
  mkdir -p "$build_dir/fixtures"
  if [ ! -f "$list" ]; then
    python3 - "$list" "$doubles" "$singles" <<'PY'
import sys
out, doubles, singles = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
H, M, D, CTX, VEC, IN = 3072, 12288, 128, 4096, 768, 64
lines = ["# FLUX.1-dev width, %d double + %d single blocks (bench/flux_wide_bench.sh)" % (doubles, singles)]
def lin(name, o, i):
    lines.append("%s.weight %d,%d" % (name, o, i))
    lines.append("%s.bias %d" % (name, o))
lin("img_in", H, IN)
lin("txt_in", H, CTX)
for e, i in (("time_in", 256), ("guidance_in", 256), ("vector_in", VEC)):
    lin(e + ".in_layer", H, i)
    lin(e + ".out_layer", H, H)
for b in range(doubles):
    p = "double_blocks.%d." % b
    for s in ("img", "txt"):
        lin(p + s + "_mod.lin", 6 * H, H)
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
    lin(p + "modulation.lin", 3 * H, H)
    lines.append(p + "norm.query_norm.scale %d" % D)
    lines.append(p + "norm.key_norm.scale %d" % D)
lin("final_layer.adaLN_modulation.1", 2 * H, H)
lin("final_layer.linear", IN, H)
open(out, "w").write("\n".join(lines) + "\n")
PY
  fi
  local file="$build_dir/fixtures/$name.safetensors"
  if [ ! -f "$file" ]; then
    echo "bench: generating $file" >&2
    "$shared/tools/make_fixture.py" "$list" "$file" --seed 21 >&2
  fi
  echo "$file"
}

# A T5 of width 4096 with one block (1 head of 64, FFN 128) and a 512-token vocabulary.
t5_list="$build_dir/fixtures/flux_wide_t5.tensors"
mkdir -p "$build_dir/fixtures"
if [ ! -f "$t5_list" ]; then
  cat >"$t5_list" <<'T5'
# T5 stand-in of width 4096 (bench/flux_wide_bench.sh)
encoder.block.0.layer.0.SelfAttention.q.weight 64,4096
encoder.block.0.layer.0.SelfAttention.k.weight 64,4096
encoder.block.0.layer.0.SelfAttention.v.weight 64,4096
encoder.block.0.layer.0.SelfAttention.o.weight 4096,64
encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight 32,1
encoder.block.0.layer.0.layer_norm.weight 4096
encoder.block.0.layer.1.DenseReluDense.wi_0.weight 128,4096
encoder.block.0.layer.1.DenseReluDense.wi_1.weight 128,4096
encoder.block.0.layer.1.DenseReluDense.wo.weight 4096,128
encoder.block.0.layer.1.layer_norm.weight 4096
encoder.final_layer_norm.weight 4096
shared.weight 512,4096
T5
fi
t5="$build_dir/fixtures/flux_wide_t5.safetensors"
[ -f "$t5" ] || "$shared/tools/make_fixture.py" "$t5_list" "$t5" --seed 22 >&2
clip=$(make_fixture flux_clip_l 12)
vae=$(make_fixture flux_ae 14)
d1s1=$(wide_fixture flux_wide_1d1s 1 1)
d2s1=$(wide_fixture flux_wide_2d1s 2 1)
d1s2=$(wide_fixture flux_wide_1d2s 1 2)

# 40 x 9 words: 360 T5 tokens + EOS -> two 256-token chunks = 512 text tokens.
prompt=$(python3 -c 'print(" ".join(["a photograph of an astronaut riding a horse"] * 40))')

run() {
  "$build_dir/ggdiff-bench" --diffusion-model "$1" --clip_l "$clip" --t5xxl "$t5" --vae "$vae" \
    --tokenizer "$shared/data/clip/merges.txt" \
    --t5xxl-tokenizer "$shared/data/t5_synthetic/tokenizer.json" \
    -p "$prompt" -W 512 -H 512 --steps "$steps" --sampling-method euler -s 1 "${@:2}"
}

results="{}"
for type in f16 q8_0; do
  extra=(--type "$type")
  for dit in "$d1s1" "$d2s1" "$d1s2"; do
    echo "flux_wide_bench: $(basename "$dit") $type" >&2
    r=$(run "$dit" "${extra[@]}" "$@")
    results=$(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); d[sys.argv[2]]=json.loads(sys.argv[3]); print(json.dumps(d))' \
      "$results" "$(basename "$dit" .safetensors)_$type" "$r")
  done
done

python3 - "$results" <<'PY'
import json, sys
runs = json.loads(sys.argv[1])
out = {"runs": runs}
for t in ("f16", "q8_0"):
    a = runs["flux_wide_1d1s_" + t]["min_step_seconds"]
    b = runs["flux_wide_2d1s_" + t]["min_step_seconds"]
    c = runs["flux_wide_1d2s_" + t]["min_step_seconds"]
    double, single = b - a, c - a
    rest = a - double - single
    out[t] = {
        "double_block_seconds": round(double, 3),
        "single_block_seconds": round(single, 3),
        "rest_of_step_seconds": round(rest, 3),
        "flux1_step_seconds_19d_38s": round(rest + 19 * double + 38 * single, 1),
        "peak_rss_mib_1d1s": runs["flux_wide_1d1s_" + t]["peak_rss_mib"],
    }
print(json.dumps(out, indent=1))
PY
