#!/usr/bin/python3
"""Independent float64 numpy reference of the LTX-2 video VAE decoder (whole sequence and
temporally tiled).

Usage: ltx_vae_reference.py DIR

DIR holds config.json, input.npy and weights/<name>.npy (torch shapes). input.npy is the
ggml tensor [W, H, C, T] written as torch [T, C, H, W]: T latent frames (diffusion latent,
before un-normalizing). The result goes to DIR/output.bin as raw little-endian float32 in the
same frame-major layout [T', 3, H', W'].

config.json: {"prefix": "first_stage_model.", "decode_timestep": 0.05,
              "tile_frames": 0, "tile_overlap": 0}
(tile_frames 0: the whole sequence in one pass.) The block list is read from the weight names
(up_blocks.N.res_blocks.M.* = a residual group; up_blocks.N.conv.conv.* = an upsampler whose
factor is its output width over the next group's width: 8 time+space, 4 space, 2 time).

Written from the LTX-Video decoder definitions (causal_video_autoencoder.py: CausalConv3d with
causal=False replicate padding, ResnetBlock3D with PixelNorm and timestep scale/shift,
DepthToSpaceUpsample, PixArtAlpha timestep embedder, per-channel statistics, unpatchify) and
the reference engine's temporal tiling rule (each convolution starts a window with the last
non-overlap input frame of the previous window; overlap output frames dropped), not from the
C++ code.
"""
import json
import math
import os
import sys

import numpy as np


class Weights:
    def __init__(self, folder, prefix):
        self.folder = folder
        self.prefix = prefix
        self.names = {f[:-4] for f in os.listdir(folder) if f.endswith(".npy")}

    def has(self, name):
        return (self.prefix + name) in self.names

    def __call__(self, name):
        return np.load(os.path.join(self.folder, self.prefix + name + ".npy")).astype(np.float64)


def pixel_norm(x):  # x [C, T, H, W]
    return x / np.sqrt(np.mean(x * x, axis=0, keepdims=True) + 1e-8)


def silu(x):
    return x / (1.0 + np.exp(-x))


def timestep_embedding(t, dim=256, max_period=10000.0):
    half = dim // 2
    freqs = np.exp(-math.log(max_period) * np.arange(half, dtype=np.float64) / half)
    args = t * freqs
    return np.concatenate([np.cos(args), np.sin(args)])


def embedder(w, p, t):
    e = timestep_embedding(t)
    e = w(p + "linear_1.weight") @ e + w(p + "linear_1.bias")
    e = silu(e)
    return w(p + "linear_2.weight") @ e + w(p + "linear_2.bias")


class Conv:
    """CausalConv3d(causal=False), kernel 3: one replicated frame each side in time (in a
    window: the previous window's cached frame in front when there is one), zeros in space."""

    def __init__(self, state):
        self.state = state  # {"cache": list or None, "idx": int, "pad": int}

    def __call__(self, w, p, x):
        weight, bias = w(p + "conv.weight"), w(p + "conv.bias")
        st = self.state
        front = x[:, :1]
        if st["cache"] is not None:
            idx = st["idx"]
            st["idx"] += 1
            while len(st["cache"]) <= idx:
                st["cache"].append(None)
            prev = st["cache"][idx]
            end = x.shape[1] - st["pad"]
            begin = max(end - 1, 0)
            if end > begin:
                st["next"][idx] = x[:, begin:end].copy()
            if prev is not None:
                front = prev
        seq = np.concatenate([front, x, x[:, -1:]], axis=1)
        seq = np.pad(seq, ((0, 0), (0, 0), (1, 1), (1, 1)))
        T, H, W = x.shape[1:]
        out = np.zeros((weight.shape[0], T, H, W)) + bias[:, None, None, None]
        for kt in range(3):
            for kh in range(3):
                for kw in range(3):
                    out += np.einsum("oi,ithw->othw", weight[:, :, kt, kh, kw],
                                     seq[:, kt:kt + T, kh:kh + H, kw:kw + W])
        return out


def depth_to_space(x, ft, fs, drop_first):
    # "b (c p1 p2 p3) t h w -> b c (t p1) (h p2) (w p3)"
    C, T, H, W = x.shape
    c = C // (ft * fs * fs)
    x = x.reshape(c, ft, fs, fs, T, H, W).transpose(0, 4, 1, 5, 2, 6, 3)
    x = x.reshape(c, T * ft, H * fs, W * fs)
    if drop_first and ft > 1:
        x = x[:, 1:]
    return x


def unpatchify(x, p):
    # "b (c r q) f h w -> b c f (h q) (w r)"
    C, T, H, W = x.shape
    c = C // (p * p)
    x = x.reshape(c, p, p, T, H, W).transpose(0, 3, 4, 2, 5, 1)
    return x.reshape(c, T, H * p, W * p)


def blocks(w):
    out = []
    i = 0
    while True:
        p = "decoder.up_blocks.%d." % i
        if w.has(p + "res_blocks.0.conv1.conv.weight"):
            n = 0
            while w.has(p + "res_blocks.%d.conv1.conv.weight" % n):
                n += 1
            out.append(("res", p, n))
        elif w.has(p + "conv.conv.weight"):
            out.append(("up", p, 0))
        else:
            return out
        i += 1


def decode(w, z, first, cfg, state):
    """z [C, T, H, W] (one window). state: the conv cache state (cache None: whole)."""
    conv = Conv(state)
    ts = None
    if w.has("decoder.timestep_scale_multiplier"):
        ts = cfg["decode_timestep"] * float(w("decoder.timestep_scale_multiplier").reshape(-1)[0])
    x = z * w("per_channel_statistics.std-of-means")[:, None, None, None] + \
        w("per_channel_statistics.mean-of-means")[:, None, None, None]
    x = conv(w, "decoder.conv_in.", x)
    bl = blocks(w)
    for k, (kind, p, n) in enumerate(bl):
        if kind == "res":
            ch = x.shape[0]
            emb = None
            if ts is not None:
                emb = embedder(w, p + "time_embedder.timestep_embedder.", ts).reshape(4, ch)
            for m in range(n):
                r = p + "res_blocks.%d." % m
                h = pixel_norm(x)
                if emb is not None:
                    table = w(r + "scale_shift_table") + emb
                    shift1, scale1, shift2, scale2 = [table[i][:, None, None, None] for i in range(4)]
                    h = h * (1 + scale1) + shift1
                h = conv(w, r + "conv1.", silu(h))
                h = pixel_norm(h)
                if emb is not None:
                    h = h * (1 + scale2) + shift2
                h = conv(w, r + "conv2.", silu(h))
                x = x + h
        else:
            ch = x.shape[0]
            conv_out = w(p + "conv.conv.bias").shape[0]
            nxt = 0
            for kind2, p2, _ in bl[k + 1:]:
                if kind2 == "res":
                    nxt = w(p2 + "res_blocks.0.conv1.conv.bias").shape[0]
                    break
            if nxt <= 0 or ch % nxt:
                nxt = max(1, ch // 2)
            factor = conv_out // nxt
            ft, fs = {8: (2, 2), 4: (1, 2), 2: (2, 1)}[factor]
            x = conv(w, p + "conv.", x)
            x = depth_to_space(x, ft, fs, first == 0)
            state["pad"] *= ft
    x = pixel_norm(x)
    if ts is not None:
        ch = x.shape[0]
        emb = embedder(w, "decoder.last_time_embedder.timestep_embedder.", ts).reshape(2, ch)
        table = w("decoder.last_scale_shift_table") + emb
        x = x * (1 + table[1][:, None, None, None]) + table[0][:, None, None, None]
    x = conv(w, "decoder.conv_out.", silu(x))
    if state["pad"] > 0:
        x = x[:, :x.shape[1] - state["pad"]]
    p = int(round(math.sqrt(x.shape[0] / 3)))
    return unpatchify(x, p)


def main():
    folder = sys.argv[1]
    cfg = json.load(open(os.path.join(folder, "config.json")))
    w = Weights(os.path.join(folder, "weights"), cfg.get("prefix", "first_stage_model."))
    z = np.load(os.path.join(folder, "input.npy")).astype(np.float64).transpose(1, 0, 2, 3)
    T = z.shape[1]
    frames, overlap = cfg.get("tile_frames", 0), cfg.get("tile_overlap", 0)
    if frames <= 0 or T <= 1:
        out = decode(w, z, 0, cfg, {"cache": None, "idx": 0, "pad": 0})
    else:
        overlap = min(overlap, frames - 1, T - 1)
        stride = max(1, frames - overlap)
        cache = []
        parts = []
        start = 0
        while start < T - overlap:
            end = min(T, start + frames)
            nxt = {}
            state = {"cache": cache, "idx": 0, "pad": overlap if end < T else 0, "next": nxt}
            parts.append(decode(w, z[:, start:end], start, cfg, state))
            for i, v in nxt.items():
                cache[i] = v
            start += stride
        out = np.concatenate(parts, axis=1)
    out.transpose(1, 0, 2, 3).astype("<f4").tofile(os.path.join(folder, "output.bin"))


if __name__ == "__main__":
    main()
