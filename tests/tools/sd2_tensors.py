#!/usr/bin/python3
"""Derives an SD2.x-layout tensor list from the SD1 fixture list, for make_fixture.py.

Usage: sd2_tensors.py SD1_LIST OUT_LIST [--layers N]

The UNet is widened 2x (so 64-channel attention heads divide every level) and its
cross-attention reads 1024-wide context through linear proj_in/proj_out, as SD2 does;
the text encoder becomes an OpenCLIP ViT-H-style transformer in the LDM checkpoint
layout (cond_stage_model.model.*: fused in_proj, ln_1/ln_2, c_fc/c_proj), with N layers.
The VAE is unchanged.
"""
import sys


def unet_dim(d):
    if d == 768:
        return 1024  # context width
    if d in (1, 3, 4):
        return d  # kernel sizes, latent channels
    return d * 2


def main():
    args = sys.argv[1:]
    layers = 3
    if "--layers" in args:
        i = args.index("--layers")
        layers = int(args[i + 1])
        del args[i:i + 2]
    src, out = args
    lines = []
    for line in open(src):
        if line.startswith("#"):
            lines.append(line.rstrip("\n"))
            continue
        if not line.strip():
            continue
        name, shape = line.split()
        dims = [int(s) for s in shape.split(",")]
        if name.startswith("cond_stage_model."):
            continue
        if name.startswith("model.diffusion_model."):
            dims = [unet_dim(d) for d in dims]
            if (".proj_in.weight" in name or ".proj_out.weight" in name) and len(dims) == 4:
                dims = dims[:2]  # SD2 uses linear projections
        lines.append(f"{name} {','.join(str(d) for d in dims)}")
    w, p = 1024, "cond_stage_model.model."
    lines.append(f"{p}token_embedding.weight 49408,{w}")
    lines.append(f"{p}positional_embedding 77,{w}")
    for i in range(layers):
        r = f"{p}transformer.resblocks.{i}."
        lines += [f"{r}ln_1.weight {w}", f"{r}ln_1.bias {w}",
                  f"{r}attn.in_proj_weight {3 * w},{w}", f"{r}attn.in_proj_bias {3 * w}",
                  f"{r}attn.out_proj.weight {w},{w}", f"{r}attn.out_proj.bias {w}",
                  f"{r}ln_2.weight {w}", f"{r}ln_2.bias {w}",
                  f"{r}mlp.c_fc.weight {4 * w},{w}", f"{r}mlp.c_fc.bias {4 * w}",
                  f"{r}mlp.c_proj.weight {w},{4 * w}", f"{r}mlp.c_proj.bias {w}"]
    lines += [f"{p}ln_final.weight {w}", f"{p}ln_final.bias {w}",
              f"{p}text_projection {w},{w}"]
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
