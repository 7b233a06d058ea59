#!/usr/bin/env python3
"""Trains ggdiff's built-in toy model: a small latent diffusion model in the SD1 layout
(KL autoencoder with 8x down factor and 4 latent channels, a small CLIP-style text encoder on
the real CLIP tokenizer, an eps-prediction UNet on the SD1 discrete schedule, trained with
caption dropout so that CFG works) on the synthetic shapes of shapes_dataset.py.

    tools/toy/train_toy.py --work /tmp/toy --out models/ggdiff-toy-shapes.safetensors

Stages (each resumable from its checkpoint in --work): dataset, autoencoder, latent scale,
text encoder + UNet, export (f16 safetensors with the canonical SD1 tensor names). Needs
Debian's python3-torch, python3-numpy and python3-pil; CPU only.
"""
import argparse
import copy
import json
import math
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clip_bpe import ClipBpe  # noqa: E402
from ldm_modules import AutoencoderKL, ClipTransformer, UNet  # noqa: E402
from shapes_dataset import make_sample  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
MERGES = os.path.join(HERE, "..", "..", "..", "shared", "data", "clip", "merges.txt")
SD_SCALE = 0.18215  # ggdiff's latent scale for 4-channel KL autoencoders
ARCH = {
    "vae": dict(ch=32, mult=(1, 2, 2, 2), res=1, z=4),
    "text": dict(d=64, inner=256, layers=4),
    "unet": dict(mc=64, mult=(1, 1, 2), depth=(0, 1, 1), res=1, ctx_dim=64, mid_depth=1),
}


def log(msg):
    print(time.strftime("%H:%M:%S"), msg, flush=True)


# ------------------------------------------------------------------------------------------
# Data


def dataset(work, count, seed):
    path = os.path.join(work, f"data_{count}_{seed}.npz")
    if os.path.exists(path):
        d = np.load(path, allow_pickle=False)
        return d["images"], list(d["captions"])
    log(f"rendering {count} samples (seed {seed})")
    rng = np.random.default_rng(seed)
    images = np.zeros((count, 64, 64, 3), np.uint8)
    captions = []
    for i in range(count):
        images[i], cap, _ = make_sample(rng)
        captions.append(cap)
    np.savez(path, images=images, captions=np.array(captions))
    return images, captions


def to_tensor(images):
    return torch.from_numpy(images).permute(0, 3, 1, 2).float() / 127.5 - 1.0


# ------------------------------------------------------------------------------------------
# Stage 1: autoencoder


def train_vae(work, images, steps, batch, seed, crop, full_steps):
    ckpt = os.path.join(work, "vae.pt")
    vae = AutoencoderKL(**ARCH["vae"])
    start = 0
    opt = torch.optim.AdamW(vae.parameters(), lr=3e-4, weight_decay=0.0)
    if os.path.exists(ckpt):
        state = torch.load(ckpt)
        vae.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        start = state["step"]
    g = torch.Generator().manual_seed(seed)
    t0 = time.time()
    for step in range(start, steps):
        idx = torch.randint(0, len(images), (batch,), generator=g)
        x = to_tensor(images[idx.numpy()])
        if crop and step < steps - full_steps:
            # Random 8-aligned crops: a quarter of the compute per sample; the convolutions
            # learn the same local maps (the single mid attention sees fewer tokens).
            ox, oy = (int(v) * 8 for v in torch.randint(0, (64 - crop) // 8 + 1, (2,), generator=g))
            x = x[..., oy:oy + crop, ox:ox + crop]
        mean, logvar = vae.encode(x)
        logvar = logvar.clamp(-30, 20)
        z = mean + torch.exp(0.5 * logvar) * torch.randn(mean.shape, generator=g)
        rec = vae.decode(z)
        kl = 0.5 * (mean.pow(2) + logvar.exp() - 1 - logvar).mean()
        # Edges matter most for shape identity: weigh the image gradient too.
        grad = (rec[..., 1:, :] - rec[..., :-1, :] - (x[..., 1:, :] - x[..., :-1, :])).abs().mean() + \
            (rec[..., 1:] - rec[..., :-1] - (x[..., 1:] - x[..., :-1])).abs().mean()
        loss = (rec - x).abs().mean() + (rec - x).pow(2).mean() + 0.5 * grad + 1e-4 * kl
        opt.zero_grad()
        loss.backward()
        opt.step()
        if (step + 1) % 50 == 0:
            log(f"vae {step + 1}/{steps} loss {loss.item():.4f} kl {kl.item():.3f} "
                f"({(time.time() - t0) / (step + 1 - start):.2f} s/step)")
        if (step + 1) % 250 == 0 or step + 1 == steps:
            torch.save({"model": vae.state_dict(), "opt": opt.state_dict(), "step": step + 1}, ckpt)
    return vae


def fold_latent_scale(vae, images):
    """Rescales the posterior so that SD_SCALE * z has unit variance: the quant conv's mean
    channels are multiplied by k (log-variance shifted by 2 ln k), the post-quant conv takes
    z / k. The decoder's output for a given image is unchanged."""
    with torch.no_grad():
        means = []
        for i in range(0, min(len(images), 4096), 256):
            means.append(vae.encode(to_tensor(images[i:i + 256]))[0])
        std = torch.cat(means).std().item()
        k = 1.0 / (SD_SCALE * std)
        z = vae.post_quant_conv.in_channels
        vae.quant_conv.weight[:z] *= k
        vae.quant_conv.bias[:z] *= k
        vae.quant_conv.bias[z:] += 2 * math.log(k)
        vae.post_quant_conv.weight /= k
    log(f"latent std {std:.3f}: scaled the posterior by {k:.3f}")
    return vae


def encode_latents(work, vae, images, tag):
    """Latents of the whole dataset, cached per autoencoder (tag names its training)."""
    path = os.path.join(work, f"latents_{tag}.npy")
    if os.path.exists(path):
        return torch.from_numpy(np.load(path))
    out = []
    with torch.no_grad():
        for i in range(0, len(images), 256):
            out.append(vae.encode(to_tensor(images[i:i + 256]))[0] * SD_SCALE)
    lat = torch.cat(out)
    np.save(path, lat.numpy())
    log(f"latents {tuple(lat.shape)}, std {lat.std().item():.3f}")
    return lat


# ------------------------------------------------------------------------------------------
# Stage 2: text encoder + UNet


def sd_alphas_cumprod():
    betas = torch.linspace(0.00085 ** 0.5, 0.012 ** 0.5, 1000, dtype=torch.float64) ** 2
    return torch.cumprod(1 - betas, 0).float()


def train_unet(work, latents, captions, tok, steps, batch, seed, dropout, tag):
    # The checkpoint belongs to the latents it was trained on (tag names the autoencoder).
    ckpt = os.path.join(work, f"unet_{tag}.pt")
    text = ClipTransformer(**ARCH["text"])
    unet = UNet(**ARCH["unet"])
    params = list(text.parameters()) + list(unet.parameters())
    opt = torch.optim.AdamW(params, lr=2e-4, weight_decay=0.0)
    ema = {"text": copy.deepcopy(text.state_dict()), "unet": copy.deepcopy(unet.state_dict())}
    start = 0
    if os.path.exists(ckpt):
        state = torch.load(ckpt)
        text.load_state_dict(state["text"])
        unet.load_state_dict(state["unet"])
        opt.load_state_dict(state["opt"])
        ema = state["ema"]
        start = state["step"]
    ids_all = torch.tensor([tok.window(c) for c in captions], dtype=torch.long)
    empty = torch.tensor(tok.window(""), dtype=torch.long)
    acp = sd_alphas_cumprod()
    g = torch.Generator().manual_seed(seed + 1)
    t0 = time.time()
    for step in range(start, steps):
        lr = 2e-4 * min(1.0, (step + 1) / 200) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * step / steps)))
        for group in opt.param_groups:
            group["lr"] = lr
        idx = torch.randint(0, len(latents), (batch,), generator=g)
        x0 = latents[idx]
        ids = ids_all[idx].clone()
        drop = torch.rand(batch, generator=g) < dropout
        ids[drop] = empty
        t = torch.randint(0, 1000, (batch,), generator=g)
        noise = torch.randn(x0.shape, generator=g)
        a = acp[t].view(-1, 1, 1, 1)
        xt = a.sqrt() * x0 + (1 - a).sqrt() * noise
        pred = unet(xt, t, text(ids))
        loss = F.mse_loss(pred, noise)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        decay = min(0.999, (1 + step) / (10 + step))
        with torch.no_grad():
            for key, mod in (("text", text), ("unet", unet)):
                for name, v in mod.state_dict().items():
                    ema[key][name].mul_(decay).add_(v, alpha=1 - decay)
        if (step + 1) % 50 == 0:
            log(f"unet {step + 1}/{steps} loss {loss.item():.4f} lr {lr:.2e} "
                f"({(time.time() - t0) / (step + 1 - start):.2f} s/step)")
        if (step + 1) % 250 == 0 or step + 1 == steps:
            torch.save({"text": text.state_dict(), "unet": unet.state_dict(), "opt": opt.state_dict(),
                        "ema": ema, "step": step + 1}, ckpt)
    text.load_state_dict(ema["text"])
    unet.load_state_dict(ema["unet"])
    return text, unet


# ------------------------------------------------------------------------------------------
# Export


def write_safetensors(path, tensors, metadata):
    """f16 safetensors (little endian), tensors sorted by name."""
    header = {"__metadata__": metadata}
    blobs, offset = [], 0
    for name in sorted(tensors):
        arr = np.ascontiguousarray(tensors[name].detach().cpu().numpy().astype("<f2"))
        header[name] = {"dtype": "F16", "shape": list(arr.shape),
                        "data_offsets": [offset, offset + arr.nbytes]}
        blobs.append(arr.tobytes())
        offset += arr.nbytes
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def export(path, vae, text, unet, metadata):
    tensors = {}
    for prefix, mod in (("first_stage_model.", vae), ("cond_stage_model.transformer.", text),
                        ("model.diffusion_model.", unet)):
        for name, v in mod.state_dict().items():
            if name.endswith("position_ids"):
                continue
            tensors[prefix + name] = v
    write_safetensors(path, tensors, metadata)
    n = sum(v.numel() for v in tensors.values())
    log(f"wrote {path}: {len(tensors)} tensors, {n / 1e6:.2f}M parameters, "
        f"{os.path.getsize(path) / 1e6:.2f} MB")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--work", required=True, help="folder for the dataset cache and checkpoints")
    ap.add_argument("--out", required=True, help="the .safetensors file to write")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--samples", type=int, default=40000)
    ap.add_argument("--vae-steps", type=int, default=3000)
    ap.add_argument("--vae-batch", type=int, default=16)
    ap.add_argument("--vae-crop", type=int, default=32, help="train on CROPxCROP crops (0: whole)")
    ap.add_argument("--vae-full-steps", type=int, default=1000,
                    help="the last N autoencoder steps see whole images (the decoder's mid\n"
                         "attention and borders at the size it will decode)")
    ap.add_argument("--unet-steps", type=int, default=6000)
    ap.add_argument("--unet-batch", type=int, default=64)
    ap.add_argument("--caption-dropout", type=float, default=0.1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--merges", default=MERGES, help="CLIP merges.txt")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    os.makedirs(args.work, exist_ok=True)
    started = time.time()

    images, captions = dataset(args.work, args.samples, args.seed)
    vae = train_vae(args.work, images, args.vae_steps, args.vae_batch, args.seed, args.vae_crop,
                    args.vae_full_steps)
    vae = fold_latent_scale(vae, images)
    tag = f"vae{args.vae_steps}"
    latents = encode_latents(args.work, vae, images, tag)
    tok = ClipBpe(args.merges)
    text, unet = train_unet(args.work, latents, captions, tok, args.unet_steps, args.unet_batch,
                            args.seed, args.caption_dropout, tag)
    metadata = {
        "modelspec.title": "ggdiff toy shapes",
        "modelspec.resolution": "64x64",
        "modelspec.license": "MIT (ggdiff)",
        "ggdiff.training": json.dumps({k: v for k, v in vars(args).items() if k != "merges"}),
        "ggdiff.arch": json.dumps(ARCH),
    }
    export(args.out, vae, text, unet, metadata)
    log(f"done in {(time.time() - started) / 60:.1f} min")


if __name__ == "__main__":
    main()
