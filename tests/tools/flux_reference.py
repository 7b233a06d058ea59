#!/usr/bin/env python3
"""Reference forward passes of the FLUX.1 DiT and the T5 v1.1 encoder in plain numpy,
float64, written from the model definitions (black-forest-labs flux/model.py and
flux/modules/layers.py; Hugging Face T5EncoderModel) with stable-diffusion.cpp's numerical
choices: LayerNorm/RMSNorm eps 1e-6, GELU in its tanh form, timestep features of t*1000
cos-half first, RoPE on interleaved pairs with axes 16/56/56 of a 128-wide head.

usage: flux_reference.py dit WEIGHTS.safetensors PREFIX INPUTS.json OUT.f32
       flux_reference.py t5  WEIGHTS.safetensors PREFIX INPUTS.json OUT.f32

INPUTS.json names raw little-endian float32 / int32 files and their shapes (outermost
first): dit: x [N,C,H,W], t [N], context [N,L,D], y [N,V], guidance [N];
t5: tokens [T] (int32). OUT receives the output as float32: dit [N,C,H,W], t5 [T,D].
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
    types = {"F32": np.float32, "F16": np.float16, "BF16": None}
    out = {}
    for name, info in header.items():
        if name == "__metadata__" or not name.startswith(prefix):
            continue
        a, b = info["data_offsets"]
        raw = data[base + a : base + b]
        if info["dtype"] == "BF16":
            u = np.frombuffer(raw, dtype=np.uint16).astype(np.uint32) << 16
            arr = u.view(np.float32)
        else:
            arr = np.frombuffer(raw, dtype=types[info["dtype"]])
        out[name[len(prefix) :]] = arr.astype(np.float64).reshape(info["shape"])
    return out


def read_input(spec):
    dtype = np.int32 if spec.get("int") else np.float32
    return np.fromfile(spec["file"], dtype=dtype).reshape(spec["shape"])


def linear(w, x, name, bias=True):
    y = x @ w[name + ".weight"].T
    if bias and name + ".bias" in w:
        y = y + w[name + ".bias"]
    return y


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def silu(x):
    return x / (1.0 + np.exp(-x))


def layer_norm(x, eps=1e-6):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps)


def rms_norm(x, scale, eps=1e-6):
    return x / np.sqrt((x**2).mean(-1, keepdims=True) + eps) * scale


def softmax(x):
    x = x - x.max(-1, keepdims=True)
    e = np.exp(x)
    return e / e.sum(-1, keepdims=True)


# ---- FLUX ------------------------------------------------------------------------------


def timestep_embedding(t, dim=256, max_period=10000, time_factor=1000.0):
    t = time_factor * t
    half = dim // 2
    freqs = np.exp(-math.log(max_period) * np.arange(half, dtype=np.float64) / half)
    args = t[:, None] * freqs[None]
    return np.concatenate([np.cos(args), np.sin(args)], axis=-1)


def rope(pos, dim, theta):
    scale = np.arange(0, dim, 2, dtype=np.float64) / dim
    omega = 1.0 / theta**scale
    out = pos[..., None] * omega  # [L, dim/2]
    return np.stack([np.cos(out), -np.sin(out), np.sin(out), np.cos(out)], axis=-1).reshape(
        *out.shape, 2, 2
    )


def embed_nd(ids, axes_dim, theta):
    return np.concatenate([rope(ids[:, i], axes_dim[i], theta) for i in range(len(axes_dim))], 1)


def apply_rope(x, freqs):
    # x [N, H, L, D]; freqs [L, D/2, 2, 2]
    xs = x.reshape(*x.shape[:-1], -1, 1, 2)
    out = freqs[..., 0] * xs[..., 0] + freqs[..., 1] * xs[..., 1]
    return out.reshape(x.shape)


def attention(q, k, v, pe):
    q, k = apply_rope(q, pe), apply_rope(k, pe)
    s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(q.shape[-1])
    o = softmax(s) @ v  # [N, H, L, D]
    n, h, l, d = o.shape
    return o.transpose(0, 2, 1, 3).reshape(n, l, h * d)


def split_heads(qkv, heads):
    n, l, c3 = qkv.shape
    d = c3 // 3 // heads
    qkv = qkv.reshape(n, l, 3, heads, d).transpose(2, 0, 3, 1, 4)
    return qkv[0], qkv[1], qkv[2]


def modulation(w, vec, name, k):
    out = linear(w, silu(vec), name + ".lin")[:, None, :]
    return np.split(out, k, axis=-1)


def flux_forward(w, x, t, context, y, guidance):
    n, c, hh, ww = x.shape
    head = w["double_blocks.0.img_attn.norm.query_norm.scale"].shape[0]
    hidden = w["img_in.weight"].shape[0]
    heads = hidden // head
    axes = [head // 8, head * 7 // 16, head * 7 // 16]
    ph, pw = (2 - hh % 2) % 2, (2 - ww % 2) % 2
    x = np.pad(x, ((0, 0), (0, 0), (0, ph), (0, pw)))
    h2, w2 = (hh + ph) // 2, (ww + pw) // 2
    img = x.reshape(n, c, h2, 2, w2, 2).transpose(0, 2, 4, 1, 3, 5).reshape(n, h2 * w2, c * 4)
    img_ids = np.zeros((h2, w2, 3))
    img_ids[..., 1] = np.arange(h2)[:, None]
    img_ids[..., 2] = np.arange(w2)[None, :]
    img_ids = img_ids.reshape(-1, 3)
    txt_ids = np.zeros((context.shape[1], 3))
    pe = embed_nd(np.concatenate([txt_ids, img_ids], 0), axes, 10000.0)

    def mlp_emb(v, name):
        return linear(w, silu(linear(w, v, name + ".in_layer")), name + ".out_layer")

    img = linear(w, img, "img_in")
    vec = mlp_emb(timestep_embedding(t), "time_in")
    if "guidance_in.in_layer.weight" in w:
        vec = vec + mlp_emb(timestep_embedding(guidance), "guidance_in")
    vec = vec + mlp_emb(y, "vector_in")
    txt = linear(w, context, "txt_in")

    i = 0
    while "double_blocks.%d.img_attn.qkv.weight" % i in w:
        p = "double_blocks.%d." % i
        im = modulation(w, vec, p + "img_mod", 6)
        tm = modulation(w, vec, p + "txt_mod", 6)
        streams = []
        for s, m, nm in ((img, im, "img"), (txt, tm, "txt")):
            h = (1 + m[1]) * layer_norm(s) + m[0]
            q, k, v = split_heads(linear(w, h, p + nm + "_attn.qkv"), heads)
            q = rms_norm(q, w[p + nm + "_attn.norm.query_norm.scale"])
            k = rms_norm(k, w[p + nm + "_attn.norm.key_norm.scale"])
            streams.append((q, k, v))
        q = np.concatenate([streams[1][0], streams[0][0]], 2)
        k = np.concatenate([streams[1][1], streams[0][1]], 2)
        v = np.concatenate([streams[1][2], streams[0][2]], 2)
        a = attention(q, k, v, pe)
        lt = txt.shape[1]
        ta, ia = a[:, :lt], a[:, lt:]
        img = img + im[2] * linear(w, ia, p + "img_attn.proj")
        h = (1 + im[4]) * layer_norm(img) + im[3]
        img = img + im[5] * linear(w, gelu_tanh(linear(w, h, p + "img_mlp.0")), p + "img_mlp.2")
        txt = txt + tm[2] * linear(w, ta, p + "txt_attn.proj")
        h = (1 + tm[4]) * layer_norm(txt) + tm[3]
        txt = txt + tm[5] * linear(w, gelu_tanh(linear(w, h, p + "txt_mlp.0")), p + "txt_mlp.2")
        i += 1

    xj = np.concatenate([txt, img], 1)
    i = 0
    while "single_blocks.%d.linear1.weight" % i in w:
        p = "single_blocks.%d." % i
        m = modulation(w, vec, p + "modulation", 3)
        h = (1 + m[1]) * layer_norm(xj) + m[0]
        f = linear(w, h, p + "linear1")
        q, k, v = split_heads(f[..., : 3 * hidden], heads)
        q = rms_norm(q, w[p + "norm.query_norm.scale"])
        k = rms_norm(k, w[p + "norm.key_norm.scale"])
        a = attention(q, k, v, pe)
        o = linear(w, np.concatenate([a, gelu_tanh(f[..., 3 * hidden :])], -1), p + "linear2")
        xj = xj + m[2] * o
        i += 1
    img = xj[:, txt.shape[1] :]
    sh, sc = np.split(linear(w, silu(vec), "final_layer.adaLN_modulation.1")[:, None, :], 2, -1)
    img = linear(w, (1 + sc) * layer_norm(img) + sh, "final_layer.linear")
    co = img.shape[-1] // 4
    out = img.reshape(n, h2, w2, co, 2, 2).transpose(0, 3, 1, 4, 2, 5).reshape(n, co, 2 * h2, 2 * w2)
    return out[:, :, :hh, :ww]


# ---- T5 --------------------------------------------------------------------------------


def t5_buckets(t, num_buckets=32, max_distance=128):
    rel = np.arange(t)[None, :] - np.arange(t)[:, None]  # key - query
    nb = num_buckets // 2
    out = (rel > 0).astype(np.int64) * nb
    a = np.abs(rel)
    max_exact = nb // 2
    large = max_exact + (
        np.log(np.maximum(a, 1) / max_exact) / math.log(max_distance / max_exact) * (nb - max_exact)
    ).astype(np.int64)
    large = np.minimum(large, nb - 1)
    return out + np.where(a < max_exact, a, large)


def t5_forward(w, tokens):
    x = w["shared.weight"][tokens]
    t = len(tokens)
    rel = w["encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"]
    heads = rel.shape[1]
    bias = rel[t5_buckets(t, rel.shape[0])].transpose(2, 0, 1)  # [H, Tq, Tk]
    i = 0
    while "encoder.block.%d.layer.0.SelfAttention.q.weight" % i in w:
        p = "encoder.block.%d.layer." % i
        h = rms_norm(x, w[p + "0.layer_norm.weight"])
        a = p + "0.SelfAttention."
        q, k, v = (linear(w, h, a + n, False) for n in "qkv")
        d = q.shape[-1] // heads
        q, k, v = (z.reshape(t, heads, d).transpose(1, 0, 2) for z in (q, k, v))
        o = softmax(q @ k.transpose(0, 2, 1) + bias) @ v
        x = x + linear(w, o.transpose(1, 0, 2).reshape(t, -1), a + "o", False)
        h = rms_norm(x, w[p + "1.layer_norm.weight"])
        f = p + "1.DenseReluDense."
        h = gelu_tanh(linear(w, h, f + "wi_0", False)) * linear(w, h, f + "wi_1", False)
        x = x + linear(w, h, f + "wo", False)
        i += 1
    return rms_norm(x, w["encoder.final_layer_norm.weight"])


def main():
    mode, weights, prefix, inputs, out = sys.argv[1:6]
    w = load_safetensors(weights, prefix)
    spec = json.load(open(inputs))
    if mode == "dit":
        r = flux_forward(
            w,
            *(read_input(spec[k]).astype(np.float64) for k in ("x", "t", "context", "y", "guidance"))
        )
    else:
        r = t5_forward(w, read_input(spec["tokens"]))
    r.astype(np.float32).tofile(out)


if __name__ == "__main__":
    main()
