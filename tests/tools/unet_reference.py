#!/usr/bin/env python3
"""Reference forward pass of the LDM UNet (SD1.x / SD2.x) in plain numpy, float64.

Written from the LDM module definitions (openaimodel.UNetModel, attention.SpatialTransformer)
with the numerical choices of stable-diffusion.cpp, which made the golden images:
GroupNorm eps 1e-6 everywhere, LayerNorm eps 1e-5, GELU in its tanh form, plain softmax
attention with scale 1/sqrt(head_dim), sinusoidal timestep features cos-half first.

usage: unet_reference.py WEIGHTS.safetensors CONFIG.json OUT.f32

WEIGHTS holds the UNet weights under PREFIX (from the config) plus the inputs
"x" [N,C,H,W], "timesteps" [N] and "context" [N or 1, T, context_dim]. OUT receives the
prediction [N, out_channels, H, W] as raw little-endian float32.
"""
import json
import struct
import sys

import numpy as np


def load_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    base = 8 + n
    types = {"F32": np.float32, "F16": np.float16}
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        arr = np.frombuffer(data[base + b : base + e], dtype=types[info["dtype"]])
        out[name] = arr.reshape(info["shape"]).astype(np.float64)
    return out


# ----------------------------------------------------------------------------- layers


def conv2d(x, w, b, stride=1, pad=0):
    """x [N,C,H,W], w [O,C,k,k] -> [N,O,H',W'] (cross-correlation, like torch)."""
    if pad:
        x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    k = w.shape[2]
    win = np.lib.stride_tricks.sliding_window_view(x, (k, k), axis=(2, 3))
    win = win[:, :, ::stride, ::stride]  # [N,C,H',W',k,k]
    y = np.einsum("nchwij,ocij->nohw", win, w, optimize=True)
    return y + b[None, :, None, None]


def group_norm(x, g, b, groups=32, eps=1e-6):
    n, c, h, w = x.shape
    xg = x.reshape(n, groups, -1)
    xg = (xg - xg.mean(-1, keepdims=True)) / np.sqrt(xg.var(-1, keepdims=True) + eps)
    return xg.reshape(n, c, h, w) * g[None, :, None, None] + b[None, :, None, None]


def layer_norm(x, g, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def silu(x):
    return x / (1.0 + np.exp(-x))


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))


def linear(x, w, b=None):
    y = x @ w.T
    return y if b is None else y + b


def softmax(s):
    s = s - s.max(-1, keepdims=True)
    e = np.exp(s)
    return e / e.sum(-1, keepdims=True)


def attention(q, k, v, heads):
    """q [N,T,C], k/v [N,S,C] -> [N,T,C]."""
    n, t, c = q.shape
    d = c // heads

    def split(a):
        return a.reshape(a.shape[0], a.shape[1], heads, d).transpose(0, 2, 1, 3)

    q, k, v = split(q), split(k), split(v)
    p = softmax(q @ k.transpose(0, 1, 3, 2) / np.sqrt(d))
    return (p @ v).transpose(0, 2, 1, 3).reshape(n, t, c)


def timestep_embedding(t, dim, max_period=10000):
    half = dim // 2
    freqs = np.exp(-np.log(max_period) * np.arange(half) / half)
    args = t[:, None] * freqs[None, :]
    return np.concatenate([np.cos(args), np.sin(args)], axis=-1)


# ----------------------------------------------------------------------------- model


class UNet:
    def __init__(self, weights, cfg):
        self.w = weights
        self.cfg = cfg
        self.p = cfg["prefix"]

    def W(self, name):
        return self.w[self.p + name]

    def lin(self, x, name, bias=True):
        return linear(x, self.W(name + ".weight"), self.W(name + ".bias") if bias else None)

    def conv(self, x, name, stride=1, pad=0):
        return conv2d(x, self.W(name + ".weight"), self.W(name + ".bias"), stride, pad)

    def gn(self, x, name):
        return group_norm(x, self.W(name + ".weight"), self.W(name + ".bias"))

    def ln(self, x, name):
        return layer_norm(x, self.W(name + ".weight"), self.W(name + ".bias"))

    def heads(self, ch):
        c = self.cfg
        return c["num_heads"] if c["num_heads"] > 0 else ch // c["head_dim"]

    def resblock(self, x, emb, p):
        h = self.conv(silu(self.gn(x, p + "in_layers.0")), p + "in_layers.2", pad=1)
        h = h + self.lin(silu(emb), p + "emb_layers.1")[:, :, None, None]
        h = self.conv(silu(self.gn(h, p + "out_layers.0")), p + "out_layers.3", pad=1)
        if self.p + p + "skip_connection.weight" in self.w:
            x = self.conv(x, p + "skip_connection")
        return x + h

    def cross_attn(self, x, ctx, p, heads):
        q = self.lin(x, p + "to_q", bias=False)
        k = self.lin(ctx, p + "to_k", bias=False)
        v = self.lin(ctx, p + "to_v", bias=False)
        return self.lin(attention(q, k, v, heads), p + "to_out.0")

    def ff(self, x, p):
        h = self.lin(x, p + "net.0.proj")
        val, gate = np.split(h, 2, axis=-1)
        return self.lin(val * gelu_tanh(gate), p + "net.2")

    def basic_block(self, x, ctx, p, heads):
        h = self.ln(x, p + "norm1")
        x = x + self.cross_attn(h, h, p + "attn1.", heads)  # self-attention
        x = x + self.cross_attn(self.ln(x, p + "norm2"), ctx, p + "attn2.", heads)
        return x + self.ff(self.ln(x, p + "norm3"), p + "ff.")

    def proj(self, t, name):
        w = self.W(name + ".weight")
        return linear(t, w.reshape(w.shape[0], w.shape[1]), self.W(name + ".bias"))

    def transformer(self, x, ctx, p, depth):
        n, c, hh, ww = x.shape
        h = self.gn(x, p + "norm")
        # 1x1 conv and linear projections are the same map on tokens.
        t = h.reshape(n, c, hh * ww).transpose(0, 2, 1)
        t = self.proj(t, p + "proj_in")
        for i in range(depth):
            t = self.basic_block(t, ctx, p + "transformer_blocks.%d." % i, self.heads(c))
        t = self.proj(t, p + "proj_out")
        return x + t.transpose(0, 2, 1).reshape(n, c, hh, ww)

    def forward(self, x, timesteps, ctx):
        cfg = self.cfg
        mc = cfg["model_channels"]
        if ctx.shape[0] != x.shape[0]:
            ctx = np.repeat(ctx, x.shape[0], axis=0)
        emb = self.lin(silu(self.lin(timestep_embedding(timesteps, mc), "time_embed.0")), "time_embed.2")

        h = self.conv(x, "input_blocks.0.0", pad=1)
        skips = [h]
        idx = 1
        levels = len(cfg["channel_mult"])
        for lv in range(levels):
            depth = cfg["transformer_depth"][lv]
            for _ in range(cfg["num_res_blocks"]):
                b = "input_blocks.%d." % idx
                h = self.resblock(h, emb, b + "0.")
                if depth > 0:
                    h = self.transformer(h, ctx, b + "1.", depth)
                skips.append(h)
                idx += 1
            if lv + 1 < levels:
                h = self.conv(h, "input_blocks.%d.0.op" % idx, stride=2, pad=1)
                skips.append(h)
                idx += 1

        h = self.resblock(h, emb, "middle_block.0.")
        if cfg["middle_depth"] > 0:
            h = self.transformer(h, ctx, "middle_block.1.", cfg["middle_depth"])
            h = self.resblock(h, emb, "middle_block.2.")
        else:
            h = self.resblock(h, emb, "middle_block.1.")

        idx = 0
        for lv in reversed(range(levels)):
            depth = cfg["transformer_depth"][lv]
            for j in range(cfg["num_res_blocks"] + 1):
                b = "output_blocks.%d." % idx
                h = np.concatenate([h, skips.pop()], axis=1)
                h = self.resblock(h, emb, b + "0.")
                if depth > 0:
                    h = self.transformer(h, ctx, b + "1.", depth)
                if lv > 0 and j == cfg["num_res_blocks"]:
                    # Nearest upsampling to the next skip connection's size (torch's
                    # F.interpolate(size=..., mode="nearest"): source index
                    # floor(i * in / out)); 2x when the level's side was even.
                    th, tw = skips[-1].shape[2], skips[-1].shape[3]
                    rows = (np.arange(th) * h.shape[2]) // th
                    cols = (np.arange(tw) * h.shape[3]) // tw
                    h = h[:, :, rows][:, :, :, cols]
                    h = self.conv(h, b + ("2" if depth > 0 else "1") + ".conv", pad=1)
                idx += 1

        h = silu(self.gn(h, "out.0"))
        return self.conv(h, "out.2", pad=1)


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    weights = load_safetensors(sys.argv[1])
    with open(sys.argv[2]) as f:
        cfg = json.load(f)
    net = UNet(weights, cfg)
    out = net.forward(weights["x"], weights["timesteps"], weights["context"])
    out.astype("<f4").tofile(sys.argv[3])


if __name__ == "__main__":
    main()
