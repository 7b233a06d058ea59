#!/usr/bin/env python3
"""Reference forward pass of the FLUX.2 DiT (BFL single-file names) in plain numpy,
float64, written from the model definition (black-forest-labs flux2 / diffusers
Flux2Transformer2DModel) with stable-diffusion.cpp's numerical choices: no biases, LayerNorm
without affine and per-head RMSNorm with eps 1e-6, SwiGLU as silu(first half) * second half,
timestep features of t*1000 cos-half first, shared modulation (shift, scale, gate), RoPE on
interleaved pairs over four 32-wide axes with theta 2000; text token i at (0,0,0,i), image
token (0,row,col,0), reference image k at (10k,row,col,0); joint order [text, image, refs].

usage: flux2_reference.py WEIGHTS.safetensors PREFIX INPUTS.json OUT.f32

INPUTS.json names raw little-endian float32 files and their shapes (outermost first):
x [N,C,H,W], t [N], context [N,L,D], optional guidance [N], optional refs: a list of
[1,C,h,w]. OUT receives the prediction [N,C,H,W] as float32.
"""
import json
import math
import struct
import sys

import numpy as np


def load_safetensors(path, prefix):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__" or not name.startswith(prefix):
            continue
        a, b = info["data_offsets"]
        raw = data[base + a : base + b]
        if info["dtype"] == "BF16":
            arr = (np.frombuffer(raw, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)
        else:
            arr = np.frombuffer(raw, dtype={"F32": np.float32, "F16": np.float16}[info["dtype"]])
        out[name[len(prefix) :]] = arr.astype(np.float64).reshape(info["shape"])
    return out


def read_input(spec):
    return np.fromfile(spec["file"], dtype=np.float32).reshape(spec["shape"]).astype(np.float64)


def silu(x):
    return x / (1.0 + np.exp(-x))


def lin(w, name, x):
    return x @ w[name + ".weight"].T


def layer_norm(x, eps=1e-6):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps)


def rms_norm(x, scale, eps=1e-6):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * scale


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def swiglu(x):
    a, b = np.split(x, 2, axis=-1)
    return silu(a) * b


def time_features(t, dim=256, max_period=10000.0):
    half = dim // 2
    freqs = np.exp(-math.log(max_period) * np.arange(half) / half)
    args = (1000.0 * t)[:, None] * freqs[None, :]
    return np.concatenate([np.cos(args), np.sin(args)], -1)


def positions(l, h, w, refs):
    ids = [(0, 0, 0, i) for i in range(l)]
    ids += [(0, r, c, 0) for r in range(h) for c in range(w)]
    for k, (rh, rw) in enumerate(refs, start=1):
        ids += [(10 * k, r, c, 0) for r in range(rh) for c in range(rw)]
    return np.array(ids, dtype=np.float64)


def rope_angles(ids, axes=(32, 32, 32, 32), theta=2000.0):
    parts = []
    for a, dim in enumerate(axes):
        omega = theta ** (-np.arange(0, dim, 2) / dim)
        parts.append(ids[:, a : a + 1] * omega[None, :])
    return np.concatenate(parts, 1)  # [T, head/2]


def rope(x, ang):
    # x [N, heads, T, d]: pairs (2j, 2j+1) turned by ang [T, d/2]
    x0, x1 = x[..., 0::2], x[..., 1::2]
    c, s = np.cos(ang), np.sin(ang)
    out = np.empty_like(x)
    out[..., 0::2] = x0 * c - x1 * s
    out[..., 1::2] = x0 * s + x1 * c
    return out


def heads_of(x, heads):
    n, t, c = x.shape
    return x.reshape(n, t, heads, c // heads).transpose(0, 2, 1, 3)


def attend(q, k, v, ang):
    q, k = rope(q, ang), rope(k, ang)
    s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(q.shape[-1])
    o = softmax(s) @ v
    n, h, t, d = o.shape
    return o.transpose(0, 2, 1, 3).reshape(n, t, h * d)


def qk(w, norm, x, heads, hidden):
    q, k, v = (heads_of(x[..., i * hidden : (i + 1) * hidden], heads) for i in range(3))
    q = rms_norm(q, w[norm + "query_norm.scale"])
    k = rms_norm(k, w[norm + "key_norm.scale"])
    return q, k, v


def mods(w, name, vec, k):
    m = lin(w, name + ".lin", silu(vec))[:, None, :]
    return np.split(m, k, axis=-1)


def forward(w, x, t, context, guidance, refs):
    n, c, hh, ww = x.shape
    hidden = w["txt_in.weight"].shape[0]
    head = w["double_blocks.0.img_attn.norm.key_norm.scale"].shape[0]
    heads = hidden // head
    depth = 1 + max(int(k.split(".")[1]) for k in w if k.startswith("double_blocks."))
    single = 1 + max(int(k.split(".")[1]) for k in w if k.startswith("single_blocks."))

    tokens = [x.reshape(n, c, hh * ww).transpose(0, 2, 1)]
    for r in refs:
        rt = r.reshape(1, c, -1).transpose(0, 2, 1)
        tokens.append(np.repeat(rt, n, axis=0))
    img = lin(w, "img_in", np.concatenate(tokens, 1))
    txt = lin(w, "txt_in", context)
    l = txt.shape[1]
    ang = rope_angles(positions(l, hh, ww, [r.shape[2:] for r in refs]))

    vec = lin(w, "time_in.out_layer", silu(lin(w, "time_in.in_layer", time_features(t))))
    if "guidance_in.in_layer.weight" in w and guidance is not None:
        g = time_features(guidance)
        vec = vec + lin(w, "guidance_in.out_layer", silu(lin(w, "guidance_in.in_layer", g)))
    im = mods(w, "double_stream_modulation_img", vec, 6)
    tm = mods(w, "double_stream_modulation_txt", vec, 6)
    sm = mods(w, "single_stream_modulation", vec, 3)

    for i in range(depth):
        b = "double_blocks.%d." % i
        iq = qk(w, b + "img_attn.norm.", lin(w, b + "img_attn.qkv", (1 + im[1]) * layer_norm(img) + im[0]), heads, hidden)
        tq = qk(w, b + "txt_attn.norm.", lin(w, b + "txt_attn.qkv", (1 + tm[1]) * layer_norm(txt) + tm[0]), heads, hidden)
        a = attend(*(np.concatenate([tq[j], iq[j]], 2) for j in range(3)), ang)
        ta, ia = a[:, :l], a[:, l:]
        img = img + im[2] * lin(w, b + "img_attn.proj", ia)
        h = (1 + im[4]) * layer_norm(img) + im[3]
        img = img + im[5] * lin(w, b + "img_mlp.2", swiglu(lin(w, b + "img_mlp.0", h)))
        txt = txt + tm[2] * lin(w, b + "txt_attn.proj", ta)
        h = (1 + tm[4]) * layer_norm(txt) + tm[3]
        txt = txt + tm[5] * lin(w, b + "txt_mlp.2", swiglu(lin(w, b + "txt_mlp.0", h)))

    xs = np.concatenate([txt, img], 1)
    for i in range(single):
        b = "single_blocks.%d." % i
        f = lin(w, b + "linear1", (1 + sm[1]) * layer_norm(xs) + sm[0])
        q, k, v = qk(w, b + "norm.", f[..., : 3 * hidden], heads, hidden)
        a = attend(q, k, v, ang)
        xs = xs + sm[2] * lin(w, b + "linear2", np.concatenate([a, swiglu(f[..., 3 * hidden :])], -1))

    out = xs[:, l : l + hh * ww]
    shift, scale = np.split(lin(w, "final_layer.adaLN_modulation.1", silu(vec))[:, None, :], 2, -1)
    out = lin(w, "final_layer.linear", (1 + scale) * layer_norm(out) + shift)
    return out.transpose(0, 2, 1).reshape(n, -1, hh, ww)


def main():
    weights, prefix, inputs, out = sys.argv[1:5]
    w = load_safetensors(weights, prefix)
    spec = json.load(open(inputs))
    g = read_input(spec["guidance"]) if "guidance" in spec else None
    refs = [read_input(r) for r in spec.get("refs", [])]
    y = forward(w, read_input(spec["x"]), read_input(spec["t"]), read_input(spec["context"]), g, refs)
    y.astype(np.float32).tofile(out)


if __name__ == "__main__":
    main()
