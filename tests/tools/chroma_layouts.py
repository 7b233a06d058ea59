#!/usr/bin/env python3
"""Re-package the chroma_tiny fixture files as a diffusers ChromaPipeline folder, with the same
weights (raw bytes are copied, never converted):

  OUT_DIR/model_index.json          "_class_name": "ChromaPipeline"
  OUT_DIR/transformer/              ChromaTransformer2DModel names: FLUX.1's diffusers block
                                    names (q/k/v split) and the approximator's
                                    in_layer/out_layer/norms.N.scale as
                                    linear_1/linear_2/norms.N.weight
  OUT_DIR/text_encoder/             the T5 file and a config.json with model_type t5
  OUT_DIR/tokenizer/tokenizer.json  the T5 tokenizer
  OUT_DIR/vae/                      diffusers AutoencoderKL names

usage: chroma_layouts.py OUT_DIR DIT T5 VAE T5_TOKENIZER
"""
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import flux_layouts  # noqa: E402

APPROX = "distilled_guidance_layer."


def approximator_name(name):
    rest = name[len(APPROX):]
    parts = rest.split(".")
    if parts[0] == "layers":
        leaf = {"in_layer": "linear_1", "out_layer": "linear_2"}[parts[2]]
        return APPROX + "layers.%s.%s.%s" % (parts[1], leaf, parts[3])
    if parts[0] == "norms":
        if parts[2] != "scale":
            raise SystemExit("unmapped " + name)
        return APPROX + "norms.%s.weight" % parts[1]
    if parts[0] in ("in_proj", "out_proj"):
        return name
    raise SystemExit("unmapped " + name)


def main():
    out, dit_p, t5_p, vae_p, t5_tok = sys.argv[1:6]
    dit = flux_layouts.read(dit_p)
    approx = {n: t for n, t in dit.items() if n.startswith(APPROX)}
    if not approx:
        sys.exit("%s has no %s tensors: not a Chroma DiT" % (dit_p, APPROX))
    blocks = {n: t for n, t in dit.items() if not n.startswith(APPROX)}
    transformer = flux_layouts.diffusers_transformer(blocks)
    transformer.update({approximator_name(n): t for n, t in approx.items()})
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    with open(os.path.join(out, "model_index.json"), "w") as f:
        json.dump({"_class_name": "ChromaPipeline", "_diffusers_version": "0.34.0"}, f)
    flux_layouts.write(os.path.join(out, "transformer", "diffusion_pytorch_model.safetensors"),
                       transformer)
    flux_layouts.write(os.path.join(out, "text_encoder", "model.safetensors"),
                       flux_layouts.read(t5_p))
    with open(os.path.join(out, "text_encoder", "config.json"), "w") as f:
        json.dump({"model_type": "t5", "architectures": ["T5EncoderModel"]}, f)
    flux_layouts.write(os.path.join(out, "vae", "diffusion_pytorch_model.safetensors"),
                       flux_layouts.diffusers_vae(flux_layouts.read(vae_p)))
    os.makedirs(os.path.join(out, "tokenizer"))
    shutil.copy(t5_tok, os.path.join(out, "tokenizer", "tokenizer.json"))


if __name__ == "__main__":
    main()
