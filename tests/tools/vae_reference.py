#!/usr/bin/python3
"""Independent float64 numpy reference of the LDM AutoencoderKL and of TAESD.

Usage: vae_reference.py DIR

DIR holds config.json, input.npy (torch NCHW) and weights/<name>.npy (torch shapes);
the result is written to DIR/output.bin as raw little-endian float32 in NCHW order.

config.json: {"model": "kl" | "taesd", "mode": "decode" | "encode", "prefix": "...",
and for "kl": ch, ch_mult, num_res_blocks, z_channels, has_quant_conv;
for "taesd": decoder_offset}.

Written from the model definitions (ldm.modules.diffusionmodules.model Encoder/Decoder,
ldm.models.autoencoder.AutoencoderKL, madebyollin/taesd taesd.py + diffusers
AutoencoderTiny value ranges), not from the C++ code.
"""
import json
import os
import sys

import numpy as np


class Weights:
    def __init__(self, folder):
        self.folder = folder

    def __call__(self, name):
        return np.load(os.path.join(self.folder, name + ".npy")).astype(np.float64)

    def has(self, name):
        return os.path.exists(os.path.join(self.folder, name + ".npy"))


def conv2d(x, w, b=None, stride=1, pad=0):
    """x [N, C, H, W], w [O, C, kh, kw] -> [N, O, H', W'] (cross-correlation, zero pad)."""
    kh, kw = w.shape[2], w.shape[3]
    if pad:
        x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    win = np.lib.stride_tricks.sliding_window_view(x, (kh, kw), axis=(2, 3))
    win = win[:, :, ::stride, ::stride]
    y = np.einsum("nchwij,ocij->nohw", win, w, optimize=True)
    if b is not None:
        y = y + b[None, :, None, None]
    return y


def group_norm(x, gamma, beta, groups=32, eps=1e-6):
    n, c, h, w = x.shape
    g = x.reshape(n, groups, -1)
    mean = g.mean(axis=-1, keepdims=True)
    var = g.var(axis=-1, keepdims=True)
    g = (g - mean) / np.sqrt(var + eps)
    return g.reshape(n, c, h, w) * gamma[None, :, None, None] + beta[None, :, None, None]


def silu(x):
    return x / (1.0 + np.exp(-x))


def relu(x):
    return np.maximum(x, 0.0)


def upsample2x(x):
    return x.repeat(2, axis=2).repeat(2, axis=3)


# --- AutoencoderKL ---------------------------------------------------------------


def conv(W, x, p, stride=1, pad=0):
    return conv2d(x, W(p + ".weight"), W(p + ".bias"), stride, pad)


def resnet(W, x, p):
    h = silu(group_norm(x, W(p + "norm1.weight"), W(p + "norm1.bias")))
    h = conv(W, h, p + "conv1", pad=1)
    h = silu(group_norm(h, W(p + "norm2.weight"), W(p + "norm2.bias")))
    h = conv(W, h, p + "conv2", pad=1)
    if W.has(p + "nin_shortcut.weight"):
        x = conv(W, x, p + "nin_shortcut")
    return x + h


def proj1x1(W, x, p):
    w = W(p + ".weight")
    w = w.reshape(w.shape[0], w.shape[1], 1, 1)
    return conv2d(x, w, W(p + ".bias"))


def attn(W, x, p):
    n, c, hh, ww = x.shape
    h = group_norm(x, W(p + "norm.weight"), W(p + "norm.bias"))
    q = proj1x1(W, h, p + "q").reshape(n, c, hh * ww).transpose(0, 2, 1)  # n, hw, c
    k = proj1x1(W, h, p + "k").reshape(n, c, hh * ww)  # n, c, hw
    v = proj1x1(W, h, p + "v").reshape(n, c, hh * ww)  # n, c, hw
    s = np.matmul(q, k) * (float(c) ** -0.5)  # n, hw_q, hw_k
    s = np.exp(s - s.max(axis=2, keepdims=True))
    s = s / s.sum(axis=2, keepdims=True)
    o = np.matmul(v, s.transpose(0, 2, 1)).reshape(n, c, hh, ww)
    return x + proj1x1(W, o, p + "proj_out")


def kl_decode(W, cfg, z):
    pre = cfg["prefix"]
    levels = len(cfg["ch_mult"])
    if cfg["has_quant_conv"]:
        z = conv(W, z, pre + "post_quant_conv")
    d = pre + "decoder."
    h = conv(W, z, d + "conv_in", pad=1)
    h = resnet(W, h, d + "mid.block_1.")
    h = attn(W, h, d + "mid.attn_1.")
    h = resnet(W, h, d + "mid.block_2.")
    for i in reversed(range(levels)):
        for j in range(cfg["num_res_blocks"] + 1):
            h = resnet(W, h, d + "up.%d.block.%d." % (i, j))
        if i != 0:
            h = conv(W, upsample2x(h), d + "up.%d.upsample.conv" % i, pad=1)
    h = silu(group_norm(h, W(d + "norm_out.weight"), W(d + "norm_out.bias")))
    return conv(W, h, d + "conv_out", pad=1)


def kl_encode(W, cfg, x):
    pre = cfg["prefix"]
    levels = len(cfg["ch_mult"])
    e = pre + "encoder."
    h = conv(W, x, e + "conv_in", pad=1)
    for i in range(levels):
        for j in range(cfg["num_res_blocks"]):
            h = resnet(W, h, e + "down.%d.block.%d." % (i, j))
        if i != levels - 1:
            h = np.pad(h, ((0, 0), (0, 0), (0, 1), (0, 1)))
            h = conv(W, h, e + "down.%d.downsample.conv" % i, stride=2)
    h = resnet(W, h, e + "mid.block_1.")
    h = attn(W, h, e + "mid.attn_1.")
    h = resnet(W, h, e + "mid.block_2.")
    h = silu(group_norm(h, W(e + "norm_out.weight"), W(e + "norm_out.bias")))
    h = conv(W, h, e + "conv_out", pad=1)
    if cfg["has_quant_conv"]:
        h = conv(W, h, pre + "quant_conv")
    return h


# --- TAESD -----------------------------------------------------------------------


def tae_conv(W, x, p, stride=1):
    b = W(p + ".bias") if W.has(p + ".bias") else None
    return conv2d(x, W(p + ".weight"), b, stride, 1)


def tae_block(W, x, p):
    h = relu(tae_conv(W, x, p + "conv.0"))
    h = relu(tae_conv(W, h, p + "conv.2"))
    h = tae_conv(W, h, p + "conv.4")
    skip = conv2d(x, W(p + "skip.weight")) if W.has(p + "skip.weight") else x
    return relu(h + skip)


def taesd_decode(W, cfg, z):
    base = cfg["prefix"] + "decoder.layers."
    i = cfg.get("decoder_offset", 0)

    def name(k):
        return base + str(k + i)

    h = np.tanh(z / 3.0) * 3.0
    h = relu(tae_conv(W, h, name(0)))
    k = 2
    for _ in range(3):
        for _ in range(3):
            h = tae_block(W, h, name(k) + ".")
            k += 1
        h = upsample2x(h)
        k += 1
        h = tae_conv(W, h, name(k))
        k += 1
    h = tae_block(W, h, name(k) + ".")
    h = tae_conv(W, h, name(k + 1))
    return h * 2.0 - 1.0


def taesd_encode(W, cfg, x):
    base = cfg["prefix"] + "encoder.layers."
    h = (x + 1.0) / 2.0
    h = tae_conv(W, h, base + "0")
    h = tae_block(W, h, base + "1.")
    k = 2
    for _ in range(3):
        h = tae_conv(W, h, base + str(k), stride=2)
        k += 1
        for _ in range(3):
            h = tae_block(W, h, base + str(k) + ".")
            k += 1
    return tae_conv(W, h, base + str(k))


def main():
    folder = sys.argv[1]
    cfg = json.load(open(os.path.join(folder, "config.json")))
    W = Weights(os.path.join(folder, "weights"))
    x = np.load(os.path.join(folder, "input.npy")).astype(np.float64)
    fn = {
        ("kl", "decode"): kl_decode,
        ("kl", "encode"): kl_encode,
        ("taesd", "decode"): taesd_decode,
        ("taesd", "encode"): taesd_encode,
    }[(cfg["model"], cfg["mode"])]
    y = fn(W, cfg, x)
    y.astype("<f4").tofile(os.path.join(folder, "output.bin"))


if __name__ == "__main__":
    main()
