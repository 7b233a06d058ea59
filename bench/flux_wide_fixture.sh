# Sourced by bench/flux_wide_bench.sh and bench/kontext_bench.sh (after fixture.sh): synthetic
# FLUX.1-dev DiTs at the real width (hidden 3072, 24 heads of 128, MLP 12288, T5 context 4096)
# with any number of double and single blocks, and a 1-block T5 stand-in of width 4096; both
# made once under build/fixtures/ (deterministic random weights).

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
# Echoes its path (build/fixtures/flux_wide_t5.safetensors), generated once.
flux_wide_t5() {
  local t5_list="$build_dir/fixtures/flux_wide_t5.tensors"
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
  local t5="$build_dir/fixtures/flux_wide_t5.safetensors"
  [ -f "$t5" ] || "$shared/tools/make_fixture.py" "$t5_list" "$t5" --seed 22 >&2
  echo "$t5"
}

# A 1-block T5 of width 4096 with 64 heads of 64 as the real one (the reference engine refuses
# flux_wide_t5's single head), FFN 128 and a 512-token vocabulary; its cost is not part of a step.
# Echoes its path (build/fixtures/kontext_bench_t5.safetensors), generated once.
flux_wide_t5_heads() {
  local t5_list="$build_dir/fixtures/kontext_bench_t5.tensors"
  local t5="$build_dir/fixtures/kontext_bench_t5.safetensors"
  mkdir -p "$build_dir/fixtures"
  if [ ! -f "$t5_list" ]; then
    python3 - "$t5_list" <<'PY'
import sys
p = "encoder.block.0.layer."
lines = ["# T5 stand-in of width 4096, 64 heads of 64 (bench/kontext_bench.sh)"]
lines += [p + "0.SelfAttention.%s.weight 4096,4096" % w for w in "qkvo"]
lines += [p + "0.SelfAttention.relative_attention_bias.weight 32,64", p + "0.layer_norm.weight 4096"]
lines += [p + "1.DenseReluDense.wi_0.weight 128,4096", p + "1.DenseReluDense.wi_1.weight 128,4096"]
lines += [p + "1.DenseReluDense.wo.weight 4096,128", p + "1.layer_norm.weight 4096"]
lines += ["encoder.final_layer_norm.weight 4096", "shared.weight 512,4096"]
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
PY
  fi
  [ -f "$t5" ] || "$shared/tools/make_fixture.py" "$t5_list" "$t5" --seed 22 >&2
  echo "$t5"
}
