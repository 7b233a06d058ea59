#!/usr/bin/env python3
"""Float64 numpy forward of the Qwen2.5-VL vision tower, written from the Hugging Face model
(Qwen2_5_VisionTransformerPretrainedModel and Qwen2VLImageProcessor's patch layout) with the
reference engine's choices (tanh GELU in the merger), independently of src/models/te/qwen_vision.

usage: qwen_vision_reference.py WEIGHTS.safetensors PREFIX PIXELS.f32 W H FULL_BLOCKS OUT.f32
  PIXELS.f32: the preprocessed image, float32, channel-major [3][H][W]
  FULL_BLOCKS: comma-separated full-attention block indexes ("" for none)
  OUT.f32: float32 [tokens][out_dim], rows in raster order of the 2x2 merge units
"""
import json
import math
import struct
import sys

import numpy as np

PATCH, TEMPORAL, MERGE, WINDOW, HEADS, THETA, EPS = 14, 2, 2, 112, 16, 10000.0, 1e-6


def load(path, prefix):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        base = 8 + n
        out = {}
        for name, meta in header.items():
            if name == "__metadata__" or not name.startswith(prefix):
                continue
            a, b = meta["data_offsets"]
            f.seek(base + a)
            dt = {"F32": np.float32, "F16": np.float16}[meta["dtype"]]
            arr = np.frombuffer(f.read(b - a), dtype=dt).reshape(meta["shape"])
            out[name[len(prefix):]] = arr.astype(np.float64)
        return out


def rms(x, w):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + EPS) * w


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def rotate_half(x):
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], axis=-1)


def window_index(gh, gw):
    """HF get_window_index for one image: merge-unit order and the window boundaries."""
    lh, lw = gh // MERGE, gw // MERGE
    ws = WINDOW // MERGE // PATCH
    index = np.arange(lh * lw).reshape(lh, lw)
    ph, pw = (ws - lh % ws) % ws, (ws - lw % ws) % ws
    padded = np.pad(index, ((0, ph), (0, pw)), constant_values=-100)
    nh, nw = (lh + ph) // ws, (lw + pw) // ws
    padded = padded.reshape(nh, ws, nw, ws).transpose(0, 2, 1, 3).reshape(nh * nw, ws, ws)
    counts = (padded != -100).sum(axis=(1, 2))
    flat = padded.reshape(-1)
    order = flat[flat != -100]
    bounds = np.concatenate([[0], np.cumsum(counts) * MERGE * MERGE])
    return order, bounds


def main():
    wpath, prefix, ppath, W, H, full, opath = sys.argv[1:8]
    W, H = int(W), int(H)
    full = {int(s) for s in full.split(",") if s}
    w = load(wpath, prefix)
    img = np.fromfile(ppath, dtype=np.float32).astype(np.float64).reshape(3, H, W)

    # Qwen2VLImageProcessor: the frame repeated on time, patches grouped by 2x2 merge units.
    gh, gw = H // PATCH, W // PATCH
    frames = np.stack([img] * TEMPORAL)  # [T, C, H, W]
    p = frames.reshape(1, TEMPORAL, 3, gh // MERGE, MERGE, PATCH, gw // MERGE, MERGE, PATCH)
    p = p.transpose(0, 3, 6, 4, 7, 2, 1, 5, 8)
    patches = p.reshape(gh * gw, 3 * TEMPORAL * PATCH * PATCH)

    if "patch_embed.proj.weight" in w:
        k = w["patch_embed.proj.weight"]
        width = k.shape[0]
        x = patches @ k.reshape(width, -1).T
    else:
        k0, k1 = w["patch_embed.proj.0.weight"], w["patch_embed.proj.1.weight"]
        width = k0.shape[0]
        pt = patches.reshape(-1, 3, TEMPORAL, PATCH * PATCH)
        x = pt[:, :, 0].reshape(len(pt), -1) @ k0.reshape(width, -1).T
        x += pt[:, :, 1].reshape(len(pt), -1) @ k1.reshape(width, -1).T
    d = width // HEADS
    tokens = gh * gw

    # 2-D rotary angles of each patch in the merge-unit order, half the pairs per axis.
    hpos = np.arange(gh)[:, None].repeat(gw, 1)
    wpos = np.arange(gw)[None, :].repeat(gh, 0)

    def grouped(a):
        return a.reshape(gh // MERGE, MERGE, gw // MERGE, MERGE).transpose(0, 2, 1, 3).reshape(-1)

    dim = d // 2
    inv = 1.0 / THETA ** (np.arange(0, dim, 2, dtype=np.float64) / dim)
    freqs = np.concatenate([np.outer(grouped(hpos), inv), np.outer(grouped(wpos), inv)], axis=1)

    order, bounds = window_index(gh, gw)
    per = MERGE * MERGE
    x = x.reshape(tokens // per, per, width)[order].reshape(tokens, width)
    freqs = freqs.reshape(tokens // per, per, -1)[order].reshape(tokens, -1)
    emb = np.concatenate([freqs, freqs], axis=1)
    cos, sin = np.cos(emb)[:, None, :], np.sin(emb)[:, None, :]

    layers = 1 + max(int(n.split(".")[1]) for n in w if n.startswith("blocks."))
    for i in range(layers):
        b = "blocks.%d." % i
        h = rms(x, w[b + "norm1.weight"])
        if b + "attn.qkv.weight" in w:
            qkv = h @ w[b + "attn.qkv.weight"].T + w[b + "attn.qkv.bias"]
            q, k, v = qkv[:, :width], qkv[:, width:2 * width], qkv[:, 2 * width:]
        else:
            q, k, v = (h @ w[b + "attn.%s_proj.weight" % n].T + w[b + "attn.%s_proj.bias" % n]
                       for n in "qkv")
        q, k, v = (t.reshape(tokens, HEADS, d) for t in (q, k, v))
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        segs = [0, tokens] if i in full else bounds
        out = np.zeros_like(q)
        for s0, s1 in zip(segs[:-1], segs[1:]):
            qs, ks, vs = q[s0:s1], k[s0:s1], v[s0:s1]
            logits = np.einsum("qhd,khd->hqk", qs, ks) / math.sqrt(d)
            logits -= logits.max(axis=-1, keepdims=True)
            pr = np.exp(logits)
            pr /= pr.sum(axis=-1, keepdims=True)
            out[s0:s1] = np.einsum("hqk,khd->qhd", pr, vs)
        x = x + out.reshape(tokens, width) @ w[b + "attn.proj.weight"].T + w[b + "attn.proj.bias"]
        h = rms(x, w[b + "norm2.weight"])
        g = h @ w[b + "mlp.gate_proj.weight"].T + w[b + "mlp.gate_proj.bias"]
        u = h @ w[b + "mlp.up_proj.weight"].T + w[b + "mlp.up_proj.bias"]
        a = g / (1.0 + np.exp(-g)) * u
        x = x + a @ w[b + "mlp.down_proj.weight"].T + w[b + "mlp.down_proj.bias"]

    h = rms(x, w["merger.ln_q.weight"]).reshape(tokens // per, per * width)
    h = gelu_tanh(h @ w["merger.mlp.0.weight"].T + w["merger.mlp.0.bias"])
    h = h @ w["merger.mlp.2.weight"].T + w["merger.mlp.2.bias"]
    h = h[np.argsort(order)]
    h.astype(np.float32).tofile(opath)


if __name__ == "__main__":
    main()
