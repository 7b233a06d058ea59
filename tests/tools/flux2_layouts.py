#!/usr/bin/env python3
"""Re-package the flux2_tiny fixture files the ways users have FLUX.2 klein on disk, with the
same weights (raw bytes are copied, never converted):

  diffusers OUT_DIR DIT LLM VAE TOKENIZER_DIR
      a diffusers Flux2KleinPipeline folder: model_index.json, transformer/
      (Flux2Transformer2DModel names: each double block's q/k/v split, RMSNorm weights named
      .weight, the final modulation stored (scale, shift) as norm_out.linear), text_encoder/
      (the Qwen3 model as it is, with a config.json), vae/ (AutoencoderKLFlux2: diffusers
      AutoencoderKL names, quant_conv / post_quant_conv at the top and the batch-norm
      statistics bn.running_mean / bn.running_var, which the engines do not read), tokenizer/
      (the Qwen2 tokenizer files)
"""
import json
import os
import shutil
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from flux_layouts import diffusers_vae, read, rows, swap_halves, write  # noqa: E402

# Original member of double_blocks.N -> diffusers member of transformer_blocks.N (the inverse of
# src/families/flux2/names.cpp's table).
DOUBLE = {
    "img_attn.norm.query_norm": "attn.norm_q",
    "img_attn.norm.key_norm": "attn.norm_k",
    "txt_attn.norm.query_norm": "attn.norm_added_q",
    "txt_attn.norm.key_norm": "attn.norm_added_k",
    "img_attn.proj": "attn.to_out.0",
    "txt_attn.proj": "attn.to_add_out",
    "img_mlp.0": "ff.linear_in",
    "img_mlp.2": "ff.linear_out",
    "txt_mlp.0": "ff_context.linear_in",
    "txt_mlp.2": "ff_context.linear_out",
}
FUSED = {
    "img_attn.qkv": ("attn.to_q", "attn.to_k", "attn.to_v"),
    "txt_attn.qkv": ("attn.add_q_proj", "attn.add_k_proj", "attn.add_v_proj"),
}
SINGLE = {
    "linear1": "attn.to_qkv_mlp_proj",
    "linear2": "attn.to_out",
    "norm.query_norm": "attn.norm_q",
    "norm.key_norm": "attn.norm_k",
}
TOP = {
    "img_in": "x_embedder",
    "txt_in": "context_embedder",
    "time_in.in_layer": "time_guidance_embed.timestep_embedder.linear_1",
    "time_in.out_layer": "time_guidance_embed.timestep_embedder.linear_2",
    "guidance_in.in_layer": "time_guidance_embed.guidance_embedder.linear_1",
    "guidance_in.out_layer": "time_guidance_embed.guidance_embedder.linear_2",
    "double_stream_modulation_img.lin": "double_stream_modulation_img.linear",
    "double_stream_modulation_txt.lin": "double_stream_modulation_txt.linear",
    "single_stream_modulation.lin": "single_stream_modulation.linear",
    "final_layer.linear": "proj_out",
}


def leaf_name(stem, leaf):
    # diffusers' RMSNorm weights are ".weight" where BFL has ".scale".
    return "weight" if leaf == "scale" else leaf


def diffusers_transformer(dit):
    out = {}
    hidden = dit["txt_in.weight"][1][0]
    for name, t in dit.items():
        stem, _, leaf = name.rpartition(".")
        if stem == "final_layer.adaLN_modulation.1":
            out["norm_out.linear." + leaf] = swap_halves(t)  # (shift, scale) -> (scale, shift)
        elif stem in TOP:
            out[TOP[stem] + "." + leaf] = t
        elif name.startswith("double_blocks.") or name.startswith("single_blocks."):
            kind, i, rest = name.split(".", 2)
            stem, _, leaf = rest.rpartition(".")
            if kind == "double_blocks":
                p = "transformer_blocks.%s." % i
                if stem in FUSED:
                    for k, n in enumerate(FUSED[stem]):
                        out[p + n + "." + leaf] = rows(t, k * hidden, hidden)
                    continue
                table = DOUBLE
            else:
                p = "single_transformer_blocks.%s." % i
                table = SINGLE
            if stem not in table:
                raise SystemExit("unmapped " + name)
            out[p + table[stem] + "." + leaf_name(stem, leaf)] = t
        else:
            raise SystemExit("unmapped " + name)
    return out


def f32(values):
    return ("F32", [len(values)], struct.pack("<%df" % len(values), *values))


def flux2_vae(vae):
    out = {}
    for name, t in diffusers_vae(vae).items():
        # AutoencoderKLFlux2 keeps its quant convs at the top.
        for inner, top in (("encoder.quant_conv.", "quant_conv."),
                           ("decoder.post_quant_conv.", "post_quant_conv.")):
            if name.startswith(inner):
                name = top + name[len(inner):]
        out[name] = t
    out["bn.running_mean"] = f32([0.0] * 128)
    out["bn.running_var"] = f32([1.0] * 128)
    return out


def diffusers(out_dir, dit, llm, vae, tokenizer_dir):
    if os.path.exists(out_dir):
        shutil.rmtree(out_dir)
    os.makedirs(out_dir)
    with open(os.path.join(out_dir, "model_index.json"), "w") as f:
        json.dump({"_class_name": "Flux2KleinPipeline", "transformer": ["diffusers",
                   "Flux2Transformer2DModel"], "text_encoder": ["transformers",
                   "Qwen3ForCausalLM"], "vae": ["diffusers", "AutoencoderKLFlux2"]}, f)
    write(os.path.join(out_dir, "transformer", "diffusion_pytorch_model.safetensors"),
          diffusers_transformer(read(dit)))
    write(os.path.join(out_dir, "vae", "diffusion_pytorch_model.safetensors"),
          flux2_vae(read(vae)))
    os.makedirs(os.path.join(out_dir, "text_encoder"))
    shutil.copyfile(llm, os.path.join(out_dir, "text_encoder", "model.safetensors"))
    with open(os.path.join(out_dir, "text_encoder", "config.json"), "w") as f:
        json.dump({"model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"]}, f)
    shutil.copytree(tokenizer_dir, os.path.join(out_dir, "tokenizer"))


def main():
    if len(sys.argv) == 7 and sys.argv[1] == "diffusers":
        diffusers(*sys.argv[2:])
        return
    raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
