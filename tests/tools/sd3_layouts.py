#!/usr/bin/env python3
"""Re-package the sd3_tiny fixture files the ways users have SD3 / SD3.5 on disk, with the same
weights (raw bytes are copied, never converted), and write a small SD3 LoRA in two namings:

  single OUT.safetensors   one SD3.5-style single-file checkpoint: model.diffusion_model.*,
                           text_encoders.clip_l.transformer.text_model.*,
                           text_encoders.clip_g.transformer.{text_model.*,
                           text_projection.weight}, text_encoders.t5xxl.transformer.* and
                           first_stage_model.*
  single-no-t5 OUT.safetensors
                           the same without text_encoders.t5xxl.* (SD3 runs without T5)
  diffusers OUT_DIR        a diffusers StableDiffusion3Pipeline folder: model_index.json,
                           transformer/ (SD3Transformer2DModel names: q/k/v split, the final and
                           the pre-only context modulations stored as (scale, shift)),
                           text_encoder/ (CLIP-L), text_encoder_2/ (bigG), text_encoder_3/ (T5),
                           vae/ (diffusers AutoencoderKL names), tokenizer/merges.txt,
                           tokenizer_3/tokenizer.json
  lora OUT_DIR             OUT_DIR/sd3_kohya.safetensors (lora_unet_joint_blocks_N_... on the
                           fused original linears) and OUT_DIR/sd3_diffusers.safetensors (PEFT
                           transformer.transformer_blocks.N.attn.to_q ...): the same deltas

usage: sd3_layouts.py single|single-no-t5|diffusers OUT MMDIT CLIP_L CLIP_G T5 VAE CLIP_MERGES
                      T5_TOKENIZER
       sd3_layouts.py lora OUT_DIR MMDIT
"""
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from flux_layouts import diffusers_vae, read, rows, swap_halves, write  # noqa: E402

# Original MMDiT member -> diffusers SD3Transformer2DModel member, inside joint_blocks.N /
# transformer_blocks.N (the inverse of src/families/sd3/names.cpp's table).
BLOCK = {
    "x_block.adaLN_modulation.1": "norm1.linear",
    "context_block.adaLN_modulation.1": "norm1_context.linear",
    "x_block.attn.ln_q": "attn.norm_q",
    "x_block.attn.ln_k": "attn.norm_k",
    "context_block.attn.ln_q": "attn.norm_added_q",
    "context_block.attn.ln_k": "attn.norm_added_k",
    "x_block.attn.proj": "attn.to_out.0",
    "context_block.attn.proj": "attn.to_add_out",
    "x_block.attn2.ln_q": "attn2.norm_q",
    "x_block.attn2.ln_k": "attn2.norm_k",
    "x_block.attn2.proj": "attn2.to_out.0",
    "x_block.mlp.fc1": "ff.net.0.proj",
    "x_block.mlp.fc2": "ff.net.2",
    "context_block.mlp.fc1": "ff_context.net.0.proj",
    "context_block.mlp.fc2": "ff_context.net.2",
}
# Fused q/k/v -> the three diffusers linears.
FUSED = {
    "x_block.attn.qkv": ("attn.to_q", "attn.to_k", "attn.to_v"),
    "context_block.attn.qkv": ("attn.add_q_proj", "attn.add_k_proj", "attn.add_v_proj"),
    "x_block.attn2.qkv": ("attn2.to_q", "attn2.to_k", "attn2.to_v"),
}
TOP = {
    "x_embedder.proj": "pos_embed.proj",
    "t_embedder.mlp.0": "time_text_embed.timestep_embedder.linear_1",
    "t_embedder.mlp.2": "time_text_embed.timestep_embedder.linear_2",
    "y_embedder.mlp.0": "time_text_embed.text_embedder.linear_1",
    "y_embedder.mlp.2": "time_text_embed.text_embedder.linear_2",
    "context_embedder": "context_embedder",
    "final_layer.linear": "proj_out",
}


def diffusers_transformer(dit):
    out = {}
    hidden = dit["x_embedder.proj.weight"][1][0]
    for name, t in dit.items():
        stem, _, leaf = name.rpartition(".")
        if name == "pos_embed":
            out["pos_embed.pos_embed"] = t
        elif stem == "final_layer.adaLN_modulation.1":
            out["norm_out.linear." + leaf] = swap_halves(t)  # (shift, scale) -> (scale, shift)
        elif stem in TOP:
            out[TOP[stem] + "." + leaf] = t
        elif name.startswith("joint_blocks."):
            _, i, rest = name.split(".", 2)
            p = "transformer_blocks.%s." % i
            stem, _, leaf = rest.rpartition(".")
            if stem in FUSED:
                for k, n in enumerate(FUSED[stem]):
                    out[p + n + "." + leaf] = rows(t, k * hidden, hidden)
            elif stem == "context_block.adaLN_modulation.1" and t[1][0] == 2 * hidden:
                # The pre-only last block: diffusers' AdaLayerNormContinuous, (scale, shift).
                out[p + "norm1_context.linear." + leaf] = swap_halves(t)
            elif stem in BLOCK:
                out[p + BLOCK[stem] + "." + leaf] = t
            else:
                raise SystemExit("unmapped " + name)
        else:
            raise SystemExit("unmapped " + name)
    return out


def lora(out_dir, dit_path):
    import numpy as np

    dit = read(dit_path)
    hidden = dit["x_embedder.proj.weight"][1][0]
    rng = np.random.default_rng(3)
    rank = 4
    kohya, peft = {}, {}

    def f32(a):
        a = np.ascontiguousarray(a, dtype="<f4")
        return ("F32", list(a.shape), a.tobytes())

    def pair(rows_out, cols):
        # Deltas of about the weights' own size (the fixture's weights are ~0.02-0.1).
        down = rng.standard_normal((rank, cols)) * 0.15
        up = rng.standard_normal((rows_out, rank)) * 0.15
        return down, up

    for i in range(4):
        for stem, parts in (("x_block.attn.qkv", FUSED["x_block.attn.qkv"]),
                            ("context_block.attn.qkv", FUSED["context_block.attn.qkv"])):
            # One down for q, k and v, three ups stacked: kohya's fused delta is the three
            # diffusers deltas one above the other.
            down, _ = pair(hidden, hidden)
            ups = [pair(hidden, hidden)[1] for _ in parts]
            k = "lora_unet_joint_blocks_%d_%s" % (i, stem.replace(".", "_"))
            kohya[k + ".lora_down.weight"] = f32(down)
            kohya[k + ".lora_up.weight"] = f32(np.concatenate(ups, axis=0))
            kohya[k + ".alpha"] = f32(np.array(rank, dtype="<f4").reshape(()))
            for n, up in zip(parts, ups):
                d = "transformer.transformer_blocks.%d.%s" % (i, n)
                peft[d + ".lora_A.weight"] = f32(down)
                peft[d + ".lora_B.weight"] = f32(up)
        for stem in ("x_block.mlp.fc1", "x_block.attn.proj"):
            w = dit["joint_blocks.%d.%s.weight" % (i, stem)]
            down, up = pair(w[1][0], w[1][1])
            k = "lora_unet_joint_blocks_%d_%s" % (i, stem.replace(".", "_"))
            kohya[k + ".lora_down.weight"] = f32(down)
            kohya[k + ".lora_up.weight"] = f32(up)
            kohya[k + ".alpha"] = f32(np.array(rank, dtype="<f4").reshape(()))
            d = "transformer.transformer_blocks.%d.%s" % (i, BLOCK[stem])
            peft[d + ".lora_A.weight"] = f32(down)
            peft[d + ".lora_B.weight"] = f32(up)
    write(os.path.join(out_dir, "sd3_kohya.safetensors"), kohya)
    write(os.path.join(out_dir, "sd3_diffusers.safetensors"), peft)


def main():
    if sys.argv[1] == "lora":
        lora(sys.argv[2], sys.argv[3])
        return
    mode, out, dit_p, clip_l_p, clip_g_p, t5_p, vae_p, merges, t5_tok = sys.argv[1:10]
    if mode in ("single", "single-no-t5"):
        all_ = {}
        all_.update({"model.diffusion_model." + n: t for n, t in read(dit_p).items()})
        all_.update({"text_encoders.clip_l.transformer." + n: t
                     for n, t in read(clip_l_p).items()})
        all_.update({"text_encoders.clip_g.transformer." + n: t
                     for n, t in read(clip_g_p).items()})
        if mode == "single":
            all_.update({"text_encoders.t5xxl.transformer." + n: t
                         for n, t in read(t5_p).items()})
        all_.update({"first_stage_model." + n: t for n, t in read(vae_p).items()})
        write(out, all_)
        return
    if mode != "diffusers":
        raise SystemExit(__doc__)
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    with open(os.path.join(out, "model_index.json"), "w") as f:
        json.dump({"_class_name": "StableDiffusion3Pipeline", "_diffusers_version": "0.31.0"}, f)
    write(os.path.join(out, "transformer", "diffusion_pytorch_model.safetensors"),
          diffusers_transformer(read(dit_p)))
    write(os.path.join(out, "text_encoder", "model.safetensors"), read(clip_l_p))
    write(os.path.join(out, "text_encoder_2", "model.safetensors"), read(clip_g_p))
    write(os.path.join(out, "text_encoder_3", "model.safetensors"), read(t5_p))
    write(os.path.join(out, "vae", "diffusion_pytorch_model.safetensors"),
          diffusers_vae(read(vae_p)))
    for sub in ("tokenizer", "tokenizer_2"):
        os.makedirs(os.path.join(out, sub))
        shutil.copy(merges, os.path.join(out, sub, "merges.txt"))
    os.makedirs(os.path.join(out, "tokenizer_3"))
    shutil.copy(t5_tok, os.path.join(out, "tokenizer_3", "tokenizer.json"))


if __name__ == "__main__":
    main()
