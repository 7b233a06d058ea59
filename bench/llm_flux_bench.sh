#!/usr/bin/env bash
# The families that run FLUX.1's DiT on an LLM's text, at the real width on this machine's CPU,
# ggdiff against the reference engine (REF_CLI, default /work/ref/sdcpp/build/bin/sd-cli,
# stable-diffusion.cpp 38a51f81), both on the same synthetic files. FAMILY (default longcat):
#  - longcat: LongCat-Image, hidden 3072 (24 heads of 128, MLP 12288), txt_in 3584 wide; a whole
#    step is 10 double + 20 single blocks; 512 text rows (the prompt padded to 548, 36 dropped);
#    the text encoder is the qwen_tiny_llm fixture (one 3584-wide layer).
#  - ovis: Ovis-Image-7B, the same width with SwiGLU MLPs (gate/up/down 12288), txt_norm and
#    txt_in 2048 wide; a whole step is 6 double + 27 single blocks; 256 text rows (padded to
#    284, 28 dropped); the text encoder a one-layer Qwen3 stand-in 2048 wide.
# For each: DiTs of one double + one single block, and one double + two single blocks. One
# single block's time is their difference; the rest of the pair's step (one double block plus
# the embedders and the final layer) is split between the double block and the rest by their
# FLOPs. The whole-step estimate is the rest + the family's blocks; the summary also scales the
# pair's time by the whole step's FLOPs over the pair's (robust when the machine is busy).
#  - a SIZE x SIZE output (default 512: 1024 image tokens), cfg 1 (one evaluation per step),
#    euler, STEPS steps (default 1); the VAE is flux_tiny's.
# Fixtures (deterministic random weights, about 1 GB each) are made once under FIXTURES
# (default BUILD_DIR/fixtures).
# Each engine's step time: ggdiff-bench's step_seconds (the minimum over the steps); the
# reference's "sampling completed, taking" time divided by the steps.
# Prints one JSON object. Environment: BUILD_DIR (default build), FIXTURES, SIZE, STEPS, REF (0:
# skip the reference engine), REF_CLI, THREADS (-t for both engines, default: all cores). Extra
# flags go to ggdiff-bench.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/fixture.sh"
family=${FAMILY:-longcat}
case $family in
  longcat) ctx=3584 text_rows=512 doubles=10 singles=20 swiglu=0 ;;
  ovis) ctx=2048 text_rows=256 doubles=6 singles=27 swiglu=1 ;;
  *) echo "llm_flux_bench: FAMILY is longcat or ovis" >&2; exit 2 ;;
esac
bench_settings llm_flux_bench 512 1
mkdir -p "$fixtures"

wide_dit() {  # wide_dit DOUBLES SINGLES -> path
  local name="${family}_wide_${1}d${2}s" list file
  list="$fixtures/$name.tensors"
  file="$fixtures/$name.safetensors"
  if [ ! -f "$list" ]; then
    python3 - "$1" "$2" "$ctx" "$swiglu" "$family" >"$list" <<'PY'
import sys
doubles, singles, CTX, swiglu = (int(v) for v in sys.argv[1:5])
H, M, D, IN = 3072, 12288, 128, 64
lines = ["# %s width, %d double + %d single blocks (bench/llm_flux_bench.sh)"
         % (sys.argv[5], doubles, singles)]
def lin(name, o, i):
    lines.append("%s.weight %d,%d" % (name, o, i))
    lines.append("%s.bias %d" % (name, o))
lin("img_in", H, IN)
lin("txt_in", H, CTX)
if swiglu:
    lines.append("txt_norm.scale %d" % CTX)
lin("time_in.in_layer", H, 256)
lin("time_in.out_layer", H, H)
for b in range(doubles):
    p = "double_blocks.%d." % b
    for s in ("img", "txt"):
        lin(p + s + "_mod.lin", 6 * H, H)
        lin(p + s + "_attn.qkv", 3 * H, H)
        lines.append(p + s + "_attn.norm.query_norm.scale %d" % D)
        lines.append(p + s + "_attn.norm.key_norm.scale %d" % D)
        lin(p + s + "_attn.proj", H, H)
        if swiglu:
            lin(p + s + "_mlp.gate_proj", M, H)
            lin(p + s + "_mlp.up_proj", M, H)
            lin(p + s + "_mlp.down_proj", H, M)
        else:
            lin(p + s + "_mlp.0", M, H)
            lin(p + s + "_mlp.2", H, M)
for b in range(singles):
    p = "single_blocks.%d." % b
    lin(p + "modulation.lin", 3 * H, H)
    lin(p + "linear1", 3 * H + (2 if swiglu else 1) * M, H)
    lin(p + "linear2", H, H + M)
    lines.append(p + "norm.query_norm.scale %d" % D)
    lines.append(p + "norm.key_norm.scale %d" % D)
lin("final_layer.adaLN_modulation.1", 2 * H, H)
lin("final_layer.linear", IN, H)
print("\n".join(lines))
PY
  fi
  if [ ! -f "$file" ]; then
    echo "llm_flux_bench: generating $file" >&2
    "$shared/tools/make_fixture.py" "$list" "$file" --seed 33 >&2
  fi
  echo "$file"
}

if [ "$family" = longcat ]; then
  llm=$(make_fixture qwen_tiny_llm 22)
else
  # A one-layer Qwen3 of Ovis 2.5's width (2048), MLP 256, with 32 heads of 128 and 8 KV heads:
  # the reference gives the 16 heads of the real 28-layer model only to 28-layer files.
  llm_list="$fixtures/ovis_bench_llm.tensors"
  llm="$fixtures/ovis_bench_llm.safetensors"
  [ -f "$llm_list" ] || cat >"$llm_list" <<'LLM'
# Qwen3 stand-in of width 2048 (bench/llm_flux_bench.sh)
model.embed_tokens.weight 151936,2048
model.layers.0.input_layernorm.weight 2048
model.layers.0.mlp.down_proj.weight 2048,256
model.layers.0.mlp.gate_proj.weight 256,2048
model.layers.0.mlp.up_proj.weight 256,2048
model.layers.0.post_attention_layernorm.weight 2048
model.layers.0.self_attn.k_norm.weight 128
model.layers.0.self_attn.k_proj.weight 1024,2048
model.layers.0.self_attn.o_proj.weight 2048,4096
model.layers.0.self_attn.q_norm.weight 128
model.layers.0.self_attn.q_proj.weight 4096,2048
model.layers.0.self_attn.v_proj.weight 1024,2048
model.norm.weight 2048
LLM
  if [ ! -f "$llm" ]; then
    echo "llm_flux_bench: generating $llm" >&2
    "$shared/tools/make_fixture.py" "$llm_list" "$llm" --seed 34 >&2
  fi
fi
vae=$(make_fixture flux_ae 14)
d1s1=$(wide_dit 1 1)
d1s2=$(wide_dit 1 2)
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
  ref_timed llm_flux_bench "$steps" 0 \
    "$ref_cli" --diffusion-model "$model" --llm "$llm" --vae "$vae" -p "$prompt" -W "$size" \
    -H "$size" --steps "$steps" --sampling-method euler --cfg-scale 1 -s 42 -t "$threads" \
    -o "$(mktemp -u).png"
}

tokens=$(((size / 16) * (size / 16)))
note="$family, ${size}x${size}: $tokens image + $text_rows text tokens"
echo "llm_flux_bench: $note" >&2
results="{\"family\": \"$family\", \"size\": $size, \"steps\": $steps, \"threads\": $threads, \"note\": \"$note\""
for dit in "$d1s1" "$d1s2"; do
  name=$(basename "$dit" .safetensors)
  echo "llm_flux_bench: $name, ggdiff" >&2
  results+=", \"ggdiff_$name\": $(ggdiff_run "$dit" "$@")"
  if [ "${REF:-1}" != 0 ] && [ -x "$ref_cli" ]; then
    echo "llm_flux_bench: $name, reference $ref_cli" >&2
    results+=", \"reference_$name\": $(ref_run "$dit")"
  fi
done
results+="}"

python3 - "$results" "$size" "$family" "$ctx" "$text_rows" "$doubles" "$singles" "$swiglu" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
size = int(sys.argv[2])
family = sys.argv[3]
CTX, T, DOUBLES, SINGLES, SWIGLU = (int(v) for v in sys.argv[4:9])
# FLOPs of one step's parts (multiply-adds x 2), to split the pair's time between the double
# block and the rest (embedders, final layer), which two files cannot separate.
H, M = 3072, 12288
N = (size // 16) ** 2
L = N + T
attn = lambda n: 2 * 2 * n * n * H  # QK^T and AV over all heads
mlp = (3 if SWIGLU else 2) * H * M
double = 2 * (T + N) * (3 * H * H + H * H + mlp) + attn(L)
rest = 2 * (N * 64 * H + T * CTX * H + N * H * 64)
single = double  # FLUX.1's single block: the same products over the same tokens
pair_flops = double + single + rest
step_flops = DOUBLES * double + SINGLES * single + rest
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
        "step_estimate_seconds": round(rest_s + DOUBLES * d + SINGLES * single, 1),
        "step_estimate_seconds_by_flops": round(pair * step_flops / pair_flops, 1),
    }
def step(run):
    s = run.get("step_seconds")
    return min(s) if isinstance(s, list) else s
summary = {"whole_step": "%d double + %d single blocks" % (DOUBLES, SINGLES),
           "step_gflop": round(step_flops / 1e9), "pair_gflop": round(pair_flops / 1e9)}
summary["ggdiff"] = blocks(step(r["ggdiff_%s_wide_1d1s" % family]),
                           step(r["ggdiff_%s_wide_1d2s" % family]))
ref_pair = r.get("reference_%s_wide_1d1s" % family, {}).get("step_seconds")
ref_three = r.get("reference_%s_wide_1d2s" % family, {}).get("step_seconds")
if ref_pair and ref_three:
    summary["reference"] = blocks(ref_pair, ref_three)
    summary["ggdiff_over_reference_pair"] = round(summary["ggdiff"]["pair_step_seconds"] / ref_pair, 3)
r["summary"] = summary
print(json.dumps(r, indent=1))
PY
