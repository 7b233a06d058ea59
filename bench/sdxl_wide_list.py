#!/usr/bin/env python3
"""sdxl_wide_list.py SDXL_MC32_LIST > LIST: a make_fixture.py tensor list of an SDXL base
checkpoint at the real width (bench: scripts/device_check.sh).

The UNet is written out at SDXL's real size (model_channels 320, channel_mult 1,2,4,
transformer depth 0,2,10 with a middle block of 10, heads of 64, linear projections, context
2048, ADM input 2816: about 2.6 billion parameters); the text encoders (full-size CLIP-L and
OpenCLIP bigG) and the VAE are the lines of the given sdxl_mc32 list, which already has them
at their real sizes.
"""
import sys

P = "model.diffusion_model."
MC, CTX, ADM, TEMB = 320, 2048, 2816, 1280
lines = ["# SDXL base at the real width (bench/sdxl_wide_list.py): UNet model_channels 320,",
         "# channel_mult 1,2,4, transformer depth 0,2,10 (middle 10), heads of 64, linear proj;",
         "# CLIP-L, OpenCLIP bigG and the VAE from shared/fixtures/sdxl_mc32.tensors"]


def t(name, *shape):
    lines.append("%s%s %s" % (P, name, ",".join(str(s) for s in shape)))


def lin(name, o, i, bias=True):
    t(name + ".weight", o, i)
    if bias:
        t(name + ".bias", o)


def conv(name, o, i, k=3):
    t(name + ".weight", o, i, k, k)
    t(name + ".bias", o)


def norm(name, c):
    t(name + ".weight", c)
    t(name + ".bias", c)


def res(name, i, o):
    norm(name + ".in_layers.0", i)
    conv(name + ".in_layers.2", o, i)
    lin(name + ".emb_layers.1", o, TEMB)
    norm(name + ".out_layers.0", o)
    conv(name + ".out_layers.3", o, o)
    if i != o:
        conv(name + ".skip_connection", o, i, 1)


def st(name, c, depth):
    norm(name + ".norm", c)
    lin(name + ".proj_in", c, c)
    for d in range(depth):
        b = "%s.transformer_blocks.%d." % (name, d)
        for a, kv in (("attn1", c), ("attn2", CTX)):
            lin(b + a + ".to_q", c, c, bias=False)
            lin(b + a + ".to_k", c, kv, bias=False)
            lin(b + a + ".to_v", c, kv, bias=False)
            lin(b + a + ".to_out.0", c, c)
        lin(b + "ff.net.0.proj", 8 * c, c)
        lin(b + "ff.net.2", c, 4 * c)
        for n in ("norm1", "norm2", "norm3"):
            norm(b + n, c)
    lin(name + ".proj_out", c, c)


lin("time_embed.0", TEMB, MC)
lin("time_embed.2", TEMB, TEMB)
lin("label_emb.0.0", TEMB, ADM)
lin("label_emb.0.2", TEMB, TEMB)
conv("input_blocks.0.0", MC, 4)
mult, depth = (1, 2, 4), (0, 2, 10)
skips = [MC]
ch, block = MC, 1
for level, m in enumerate(mult):
    for _ in range(2):
        res("input_blocks.%d.0" % block, ch, m * MC)
        ch = m * MC
        if depth[level]:
            st("input_blocks.%d.1" % block, ch, depth[level])
        skips.append(ch)
        block += 1
    if level != len(mult) - 1:
        conv("input_blocks.%d.0.op" % block, ch, ch)
        skips.append(ch)
        block += 1
res("middle_block.0", ch, ch)
st("middle_block.1", ch, 10)
res("middle_block.2", ch, ch)
block = 0
for level, m in reversed(list(enumerate(mult))):
    for i in range(3):
        res("output_blocks.%d.0" % block, ch + skips.pop(), m * MC)
        ch = m * MC
        if depth[level]:
            st("output_blocks.%d.1" % block, ch, depth[level])
        if level and i == 2:
            conv("output_blocks.%d.%d.conv" % (block, 2 if depth[level] else 1), ch, ch)
        block += 1
norm("out.0", MC)
conv("out.2", 4, MC)

for line in open(sys.argv[1]):
    line = line.rstrip("\n")
    if line and not line.startswith("#") and not line.startswith(P):
        lines.append(line)
print("\n".join(lines))
