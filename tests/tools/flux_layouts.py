#!/usr/bin/env python3
"""Re-package the flux_tiny fixture files the ways users have FLUX.1 on disk, with the same
weights (raw bytes are copied, never converted):

  single OUT.safetensors   one ComfyUI-style checkpoint: model.diffusion_model.*,
                           text_encoders.clip_l.transformer.*, text_encoders.t5xxl.transformer.*
                           and vae.*
  diffusers OUT_DIR        a diffusers FluxPipeline folder: model_index.json, transformer/
                           (FluxTransformer2DModel names: q/k/v split, final adaLN stored as
                           (scale, shift)), text_encoder/, text_encoder_2/, vae/ (diffusers
                           AutoencoderKL names), tokenizer/merges.txt, tokenizer_2/tokenizer.json

  reshape OUT FILE NAME SHAPE
                           FILE with tensor NAME declared with another shape (comma
                           separated), its data cut or zero-padded to fit: a broken checkpoint
  drop OUT FILE PREFIX     FILE without the tensors whose names start with PREFIX (the dev
                           DiT without guidance_in.*: a schnell layout)

  A diffusers folder's model_index.json names FluxPipeline, or PIPELINE when given (the
  FLUX.1 Kontext fixture as a FluxKontextPipeline folder).

  longcat-comfy OUT DIT    a LongCat DiT as Comfy-Org stores it: the q/k RMSNorm weights named
                           ...query_norm.weight / ...key_norm.weight instead of .scale
  longcat-diffusers OUT_DIR DIT LLM VAE QWEN_TOKENIZER_DIR
                           a diffusers LongCatImagePipeline folder: transformer/ (as FLUX's,
                           the timestep MLP named time_embed.timestep_embedder.linear_1/2),
                           text_encoder/ (the LLM file's tensors), vae/, tokenizer/ (the
                           vocab.json, merges.txt and added_tokens.json of QWEN_TOKENIZER_DIR)

usage: flux_layouts.py single|diffusers OUT DIT CLIP_L T5 VAE CLIP_MERGES T5_TOKENIZER [PIPELINE]
       flux_layouts.py reshape OUT FILE NAME SHAPE
       flux_layouts.py drop OUT FILE PREFIX
"""
import json
import os
import shutil
import struct
import sys


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        out[name] = (info["dtype"], list(info["shape"]), data[base + a : base + b])
    return out


def write(path, tensors):
    header, offset, blobs = {}, 0, []
    for name in sorted(tensors):
        dtype, shape, raw = tensors[name]
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        blobs.append(raw)
    blob = json.dumps(header, separators=(",", ":")).encode()
    blob += b" " * (-len(blob) % 8)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(blob)))
        f.write(blob)
        for b in blobs:
            f.write(b)


def rows(t, first, count):
    """Rows [first, first+count) of a tensor (outermost dimension)."""
    dtype, shape, raw = t
    row = len(raw) // shape[0]
    return (dtype, [count] + shape[1:], raw[first * row : (first + count) * row])


def swap_halves(t):
    h = t[1][0] // 2
    a, b = rows(t, 0, h), rows(t, h, h)
    return (t[0], t[1], b[2] + a[2])


def diffusers_transformer(dit):
    out = {}
    hidden = dit["img_in.weight"][1][0]
    mlp = dit["double_blocks.0.img_mlp.0.weight"][1][0]
    plain = {
        "img_in": "x_embedder",
        "txt_in": "context_embedder",
        "time_in.in_layer": "time_text_embed.timestep_embedder.linear_1",
        "time_in.out_layer": "time_text_embed.timestep_embedder.linear_2",
        "guidance_in.in_layer": "time_text_embed.guidance_embedder.linear_1",
        "guidance_in.out_layer": "time_text_embed.guidance_embedder.linear_2",
        "vector_in.in_layer": "time_text_embed.text_embedder.linear_1",
        "vector_in.out_layer": "time_text_embed.text_embedder.linear_2",
        "final_layer.linear": "proj_out",
    }
    double = {
        "img_mod.lin": "norm1.linear",
        "txt_mod.lin": "norm1_context.linear",
        "img_attn.proj": "attn.to_out.0",
        "txt_attn.proj": "attn.to_add_out",
        "img_mlp.0": "ff.net.0.proj",
        "img_mlp.2": "ff.net.2",
        "txt_mlp.0": "ff_context.net.0.proj",
        "txt_mlp.2": "ff_context.net.2",
        "img_attn.norm.query_norm.scale": "attn.norm_q.weight",
        "img_attn.norm.key_norm.scale": "attn.norm_k.weight",
        "txt_attn.norm.query_norm.scale": "attn.norm_added_q.weight",
        "txt_attn.norm.key_norm.scale": "attn.norm_added_k.weight",
    }
    single = {
        "modulation.lin": "norm.linear",
        "linear2": "proj_out",
        "norm.query_norm.scale": "attn.norm_q.weight",
        "norm.key_norm.scale": "attn.norm_k.weight",
    }
    for name, t in dit.items():
        stem, _, leaf = name.rpartition(".")
        if name.startswith("final_layer.adaLN_modulation.1."):
            out["norm_out.linear." + leaf] = swap_halves(t)
        elif stem in plain:
            out[plain[stem] + "." + leaf] = t
        elif name.startswith("double_blocks."):
            _, i, rest = name.split(".", 2)
            p = "transformer_blocks.%s." % i
            stem, _, leaf = rest.rpartition(".")
            if rest in double:
                out[p + double[rest]] = t
            elif stem in double:
                out[p + double[stem] + "." + leaf] = t
            elif stem in ("img_attn.qkv", "txt_attn.qkv"):
                names = ("to_q", "to_k", "to_v") if stem[0] == "i" else (
                    "add_q_proj", "add_k_proj", "add_v_proj")
                for k, n in enumerate(names):
                    out[p + "attn." + n + "." + leaf] = rows(t, k * hidden, hidden)
            else:
                raise SystemExit("unmapped " + name)
        elif name.startswith("single_blocks."):
            _, i, rest = name.split(".", 2)
            p = "single_transformer_blocks.%s." % i
            stem, _, leaf = rest.rpartition(".")
            if rest in single:
                out[p + single[rest]] = t
            elif stem in single:
                out[p + single[stem] + "." + leaf] = t
            elif stem == "linear1":
                for k, n in enumerate(("attn.to_q", "attn.to_k", "attn.to_v")):
                    out[p + n + "." + leaf] = rows(t, k * hidden, hidden)
                out[p + "proj_mlp." + leaf] = rows(t, 3 * hidden, mlp)
            else:
                raise SystemExit("unmapped " + name)
        else:
            raise SystemExit("unmapped " + name)
    return out


def diffusers_vae(vae):
    levels = 1 + max(int(n.split(".")[2]) for n in vae if n.startswith("decoder.up."))
    attn = {"norm": "group_norm", "q": "to_q", "k": "to_k", "v": "to_v", "proj_out": "to_out.0"}
    out = {}
    for name, t in vae.items():
        coder, rest = name.split(".", 1)
        parts = rest.split(".")
        if parts[0] == "mid" and parts[1].startswith("block_"):
            new = "mid_block.resnets.%d.%s" % (int(parts[1][6:]) - 1, ".".join(parts[2:]))
        elif parts[0] == "mid" and parts[1] == "attn_1":
            new = "mid_block.attentions.0.%s.%s" % (attn[parts[2]], parts[3])
            if len(t[1]) == 4:
                t = (t[0], t[1][:2], t[2])
        elif parts[0] in ("down", "up"):
            level = int(parts[1])
            if parts[0] == "up":
                level = levels - 1 - level
            blocks = "down_blocks" if parts[0] == "down" else "up_blocks"
            if parts[2] == "block":
                new = "%s.%d.resnets.%s.%s" % (blocks, level, parts[3], ".".join(parts[4:]))
            else:
                sampler = "downsamplers" if parts[2] == "downsample" else "upsamplers"
                new = "%s.%d.%s.0.%s" % (blocks, level, sampler, ".".join(parts[3:]))
        elif parts[0] == "norm_out":
            new = "conv_norm_out." + parts[1]
        else:
            new = rest
        out[coder + "." + new.replace("nin_shortcut", "conv_shortcut")] = t
    return out


def reshape(out, path, name, shape):
    tensors = read(path)
    dtype, _, raw = tensors[name]
    shape = [int(v) for v in shape.split(",")]
    n = 2
    for v in shape:
        n *= v
    tensors[name] = (dtype, shape, (raw + bytes(max(0, n - len(raw))))[:n])
    write(out, tensors)


def drop(out, path, prefix):
    tensors = read(path)
    kept = {n: t for n, t in tensors.items() if not n.startswith(prefix)}
    if len(kept) == len(tensors):
        sys.exit("no tensor of %s starts with %s" % (path, prefix))
    write(out, kept)


def longcat_comfy(out, path):
    tensors = read(path)
    renamed = {}
    for name, t in tensors.items():
        if name.endswith(("query_norm.scale", "key_norm.scale")):
            name = name[: -len("scale")] + "weight"
        renamed[name] = t
    write(out, renamed)


def longcat_diffusers(out, dit_p, llm_p, vae_p, tokenizer_dir):
    transformer = {}
    for name, t in diffusers_transformer(read(dit_p)).items():
        transformer[name.replace("time_text_embed.timestep_embedder.",
                                 "time_embed.timestep_embedder.")] = t
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    with open(os.path.join(out, "model_index.json"), "w") as f:
        json.dump({"_class_name": "LongCatImagePipeline", "_diffusers_version": "0.36.0"}, f)
    write(os.path.join(out, "transformer", "diffusion_pytorch_model.safetensors"), transformer)
    write(os.path.join(out, "text_encoder", "model.safetensors"), read(llm_p))
    write(os.path.join(out, "vae", "diffusion_pytorch_model.safetensors"),
          diffusers_vae(read(vae_p)))
    os.makedirs(os.path.join(out, "tokenizer"))
    for f in ("vocab.json", "merges.txt", "added_tokens.json"):
        shutil.copy(os.path.join(tokenizer_dir, f), os.path.join(out, "tokenizer", f))


def main():
    if sys.argv[1] == "longcat-comfy":
        longcat_comfy(*sys.argv[2:4])
        return
    if sys.argv[1] == "longcat-diffusers":
        longcat_diffusers(*sys.argv[2:7])
        return
    if sys.argv[1] == "reshape":
        reshape(*sys.argv[2:6])
        return
    if sys.argv[1] == "drop":
        drop(*sys.argv[2:5])
        return
    mode, out, dit_p, clip_p, t5_p, vae_p, merges, t5_tok = sys.argv[1:9]
    pipeline = sys.argv[9] if len(sys.argv) > 9 else "FluxPipeline"
    dit, clip, t5, vae = read(dit_p), read(clip_p), read(t5_p), read(vae_p)
    if mode == "single":
        all_ = {}
        all_.update({"model.diffusion_model." + n: t for n, t in dit.items()})
        all_.update({"text_encoders.clip_l.transformer." + n: t for n, t in clip.items()})
        all_.update({"text_encoders.t5xxl.transformer." + n: t for n, t in t5.items()})
        all_.update({"vae." + n: t for n, t in vae.items()})
        write(out, all_)
        return
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    with open(os.path.join(out, "model_index.json"), "w") as f:
        json.dump({"_class_name": pipeline, "_diffusers_version": "0.30.0"}, f)
    write(os.path.join(out, "transformer", "diffusion_pytorch_model.safetensors"),
          diffusers_transformer(dit))
    write(os.path.join(out, "text_encoder", "model.safetensors"), clip)
    write(os.path.join(out, "text_encoder_2", "model.safetensors"), t5)
    write(os.path.join(out, "vae", "diffusion_pytorch_model.safetensors"), diffusers_vae(vae))
    os.makedirs(os.path.join(out, "tokenizer"))
    shutil.copy(merges, os.path.join(out, "tokenizer", "merges.txt"))
    os.makedirs(os.path.join(out, "tokenizer_2"))
    shutil.copy(t5_tok, os.path.join(out, "tokenizer_2", "tokenizer.json"))


if __name__ == "__main__":
    main()
