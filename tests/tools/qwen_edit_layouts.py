#!/usr/bin/env python3
"""Re-package the qwen_edit_tiny fixture files the ways users have Qwen Image Edit on disk, with
the same weights (raw bytes are copied, never converted):

  split LLM TEXT_OUT VISION_OUT NAMING
      the --llm file (Qwen2.5-VL text model + vision tower under "visual.") as a text-only
      file and a vision-only file for --llm_vision, the tower named by NAMING:
        visual  HF names as in the LLM file ("visual.blocks.0.attn.qkv.weight")
        bare    without the "visual." prefix ("blocks.0.attn.qkv.weight", "patch_embed...")
        mmproj  llama.cpp mmproj names: v.blk.N.attn_q/k/v (the fused qkv split in three,
                biases too), attn_out, ln1/ln2, ffn_gate/up/down, v.patch_embd.weight and
                v.patch_embd.weight.1 (time slices 0 and 1 of the Conv3d patch embed, each a
                Conv2d [W,3,14,14]), v.post_ln (the merger's ln_q), mm.0 / mm.2
      TEXT_OUT may be "-" to skip it.
  narrow_merger LLM VISION_OUT WIDTH
      the vision tower alone whose merger gives rows of WIDTH (merger.mlp.2 cut to WIDTH rows):
      not the LLM's vision tower
  zero_cond DIT OUT
      the DiT as ComfyUI stores Qwen Image Edit 2511: every name under "model.diffusion_model."
      plus the marker tensor "model.diffusion_model.__index_timestep_zero__"
"""
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from flux_layouts import read, rows, write  # noqa: E402

VISUAL = "visual."

MMPROJ_BLOCK = {
    "attn.proj": "attn_out",
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
    "norm1": "ln1",
    "norm2": "ln2",
}


def time_slice(t, k):
    """Slice k of dimension 2 of a [W, C, T, P, P] tensor, as [W, C, P, P]."""
    dtype, shape, raw = t
    w, c, tp, p, q = shape
    es = len(raw) // (w * c * tp * p * q)
    plane = p * q * es
    out = bytearray()
    for i in range(w * c):
        base = (i * tp + k) * plane
        out += raw[base : base + plane]
    return (dtype, [w, c, p, q], bytes(out))


def mmproj(vision):
    out = {}
    for name, t in vision.items():
        if name == "patch_embed.proj.weight":
            for k in range(t[1][2]):
                out["v.patch_embd.weight" + ("" if k == 0 else ".%d" % k)] = time_slice(t, k)
        elif name.startswith("merger.ln_q."):
            out["v.post_ln." + name.rsplit(".", 1)[1]] = t
        elif name.startswith("merger.mlp."):
            out["mm." + name[len("merger.mlp.") :]] = t
        elif name.startswith("blocks."):
            _, i, rest = name.split(".", 2)
            stem, _, leaf = rest.rpartition(".")
            p = "v.blk.%s." % i
            if stem == "attn.qkv":
                n = t[1][0] // 3
                for j, part in enumerate(("attn_q", "attn_k", "attn_v")):
                    out[p + part + "." + leaf] = rows(t, j * n, n)
            elif stem in MMPROJ_BLOCK:
                out[p + MMPROJ_BLOCK[stem] + "." + leaf] = t
            else:
                raise SystemExit("no mmproj name for " + name)
        else:
            raise SystemExit("no mmproj name for " + name)
    return out


def tower(llm):
    return {n[len(VISUAL) :]: t for n, t in llm.items() if n.startswith(VISUAL)}


def main(argv):
    if len(argv) >= 5 and argv[0] == "split":
        llm = read(argv[1])
        vision = tower(llm)
        if not vision:
            raise SystemExit(argv[1] + ": no visual.* tensors")
        if argv[2] != "-":
            write(argv[2], {n: t for n, t in llm.items() if not n.startswith(VISUAL)})
        naming = argv[4]
        if naming == "visual":
            vision = {VISUAL + n: t for n, t in vision.items()}
        elif naming == "mmproj":
            vision = mmproj(vision)
        elif naming != "bare":
            raise SystemExit("naming: visual, bare or mmproj")
        write(argv[3], vision)
    elif len(argv) >= 4 and argv[0] == "narrow_merger":
        vision = {VISUAL + n: t for n, t in tower(read(argv[1])).items()}
        width = int(argv[3])
        vision["visual.merger.mlp.2.weight"] = rows(vision["visual.merger.mlp.2.weight"], 0, width)
        vision["visual.merger.mlp.2.bias"] = rows(vision["visual.merger.mlp.2.bias"], 0, width)
        write(argv[2], vision)
    elif len(argv) >= 3 and argv[0] == "zero_cond":
        dit = {"model.diffusion_model." + n: t for n, t in read(argv[1]).items()}
        dit["model.diffusion_model.__index_timestep_zero__"] = ("F16", [1], struct.pack("<e", 0.0))
        write(argv[2], dit)
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
