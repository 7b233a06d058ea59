#!/usr/bin/python3
"""Independent float64 numpy reference of the Wan 2.1 and 2.2 video VAEs (causal 3-D decode and
encode).

Usage: wan_vae_reference.py DIR

DIR holds config.json, input.npy and weights/<name>.npy (torch shapes). input.npy is the
ggml tensor [W, H, C, F] written as torch [F, C, H, W]: the F frames of one video (decode: F
latent frames in VAE space, z * std + mean already applied). The result is written to
DIR/output.bin as raw little-endian float32 in the same frame-major layout [F', C', H', W'].

config.json: {"mode": "decode" | "encode", "prefix": "first_stage_model.", "circular": false}
(circular: seamless tiling on both axes, see CIRCULAR). The block list
(residual blocks, spatial and temporal resamplers) is read from the weight names.

Written from the model definitions of Wan 2.1 (wan/modules/vae.py: CausalConv3d, RMS_norm,
Resample, ResidualBlock, AttentionBlock, Encoder3d, Decoder3d, WanVAE_.encode/decode) and
Wan 2.2 (wan/modules/vae2_2.py: patchify, AvgDown3D, DupUp3D, Down_ResidualBlock,
Up_ResidualBlock; weights nested as {en,de}coder.{down,up}samples.I.{down,up}samples.J), in
their chunked form with a feature cache per causal convolution (CACHE_T = 2 frames), not
from the C++ code. Wan 2.2 is recognised by its nested block names (patch size 2).
"""
import json
import os
import sys

import numpy as np

CACHE_T = 2
# Seamless tiling on both axes as stable-diffusion.cpp does it ("circular": true): padded
# convolutions wrap around in space, and the causal padding in front of a chunk's frames
# wraps around its sequence in time (that engine pads all axes of a 3-D convolution at once).
CIRCULAR = False


class Weights:
    def __init__(self, folder, prefix):
        self.folder = folder
        self.prefix = prefix

    def __call__(self, name):
        return np.load(os.path.join(self.folder, self.prefix + name + ".npy")).astype(np.float64)

    def has(self, name):
        return os.path.exists(os.path.join(self.folder, self.prefix + name + ".npy"))


# --- primitives on [N, C, T, H, W] -------------------------------------------------


def conv3d(x, w, b, stride_t=1):
    """Valid (unpadded) 3-D cross-correlation, stride `stride_t` in time, 1 in space."""
    kt, kh, kw = w.shape[2], w.shape[3], w.shape[4]
    win = np.lib.stride_tricks.sliding_window_view(x, (kt, kh, kw), axis=(2, 3, 4))
    win = win[:, :, ::stride_t]
    y = np.einsum("ncthwabd,ocabd->nothw", win, w, optimize=True)
    return y + b[None, :, None, None, None]


def conv2d(x, w, b, stride=1):
    """x [N, C, H, W], valid cross-correlation."""
    kh, kw = w.shape[2], w.shape[3]
    win = np.lib.stride_tricks.sliding_window_view(x, (kh, kw), axis=(2, 3))
    win = win[:, :, ::stride, ::stride]
    return np.einsum("nchwij,ocij->nohw", win, w, optimize=True) + b[None, :, None, None]


def causal_conv3d(W, name, x, cache=None, stride_t=1):
    """CausalConv3d: zero padding (2 * pad_t in front of time, pad in space); a cache
    replaces that many of the leading zero frames."""
    w = W(name + ".weight")
    kt, kh = w.shape[2], w.shape[3]
    pad_t, pad_s = (kt - 1) // 2 if stride_t == 1 else 0, (kh - 1) // 2
    front = 2 * pad_t
    if cache is not None and front > 0:
        x = np.concatenate([cache, x], axis=2)
        front -= cache.shape[2]
    mode = "wrap" if CIRCULAR else "constant"
    x = np.pad(x, ((0, 0), (0, 0), (front, 0), (0, 0), (0, 0)), mode=mode)
    x = np.pad(x, ((0, 0), (0, 0), (0, 0), (pad_s, pad_s), (pad_s, pad_s)), mode=mode)
    return conv3d(x, w, W(name + ".bias"), stride_t)


def rms_norm(x, gamma):
    """F.normalize over channels (dim 1) * sqrt(C) * gamma."""
    c = x.shape[1]
    n = np.sqrt((x * x).sum(axis=1, keepdims=True))
    shape = [1, c] + [1] * (x.ndim - 2)
    return x / np.maximum(n, 1e-12) * np.sqrt(c) * gamma.reshape(shape)


def silu(x):
    return x / (1.0 + np.exp(-x))


def per_frame(x, fn):
    """Applies a 2-D function to every frame: [N, C, T, H, W] -> (N T) C H W -> back."""
    n, c, t, h, w = x.shape
    y = fn(x.transpose(0, 2, 1, 3, 4).reshape(n * t, c, h, w))
    return y.reshape(n, t, y.shape[1], y.shape[2], y.shape[3]).transpose(0, 2, 1, 3, 4)


def patchify(x, p):
    """b c f (h q) (w r) -> b (c r q) f h w"""
    b, c, f, hh, ww = x.shape
    x = x.reshape(b, c, f, hh // p, p, ww // p, p)
    return x.transpose(0, 1, 6, 4, 2, 3, 5).reshape(b, c * p * p, f, hh // p, ww // p)


def unpatchify(x, p):
    """b (c r q) f h w -> b c f (h q) (w r)"""
    b, crq, f, h, w = x.shape
    c = crq // (p * p)
    x = x.reshape(b, c, p, p, f, h, w)
    return x.transpose(0, 1, 4, 5, 3, 6, 2).reshape(b, c, f, h * p, w * p)


def avg_down(x, out_c, ft, fs):
    """AvgDown3D: frames padded in front to a multiple of ft, (ft, fs, fs) blocks into
    channels, then the mean over groups of channels."""
    b, c, t, h, w = x.shape
    pad_t = (ft - t % ft) % ft
    x = np.pad(x, ((0, 0), (0, 0), (pad_t, 0), (0, 0), (0, 0)))
    t = x.shape[2]
    x = x.reshape(b, c, t // ft, ft, h // fs, fs, w // fs, fs)
    x = x.transpose(0, 1, 3, 5, 7, 2, 4, 6)
    x = x.reshape(b, c * ft * fs * fs, t // ft, h // fs, w // fs)
    group = c * ft * fs * fs // out_c
    return x.reshape(b, out_c, group, t // ft, h // fs, w // fs).mean(axis=2)


def dup_up(x, out_c, ft, fs, first_chunk):
    """DupUp3D: channels repeated (repeat_interleave), then channels into (ft, fs, fs)."""
    b, c, t, h, w = x.shape
    x = np.repeat(x, out_c * ft * fs * fs // c, axis=1)
    x = x.reshape(b, out_c, ft, fs, fs, t, h, w)
    x = x.transpose(0, 1, 5, 2, 6, 3, 7, 4)
    x = x.reshape(b, out_c, t * ft, h * fs, w * fs)
    if first_chunk:
        x = x[:, :, ft - 1 :]
    return x


# --- blocks -------------------------------------------------------------------------


class Net:
    def __init__(self, W):
        self.W = W
        self.cache = []
        self.idx = 0

    def cached_conv(self, name, x):
        """A causal conv with the chunk feature cache (last CACHE_T input frames)."""
        i = self.idx
        cache_x = x[:, :, -CACHE_T:].copy()
        if cache_x.shape[2] < 2 and self.cache[i] is not None:
            cache_x = np.concatenate([self.cache[i][:, :, -1:], cache_x], axis=2)
        x = causal_conv3d(self.W, name, x, self.cache[i])
        self.cache[i] = cache_x
        self.idx += 1
        return x

    def residual(self, p, x):
        W = self.W
        h = causal_conv3d(W, p + "shortcut", x) if W.has(p + "shortcut.weight") else x
        x = silu(rms_norm(x, W(p + "residual.0.gamma")))
        x = self.cached_conv(p + "residual.2", x)
        x = silu(rms_norm(x, W(p + "residual.3.gamma")))
        x = self.cached_conv(p + "residual.6", x)
        return x + h

    def attention(self, p, x):
        W = self.W

        def one(f):  # [B, C, H, W]
            b, c, h, w = f.shape
            y = rms_norm(f, W(p + "norm.gamma"))
            qkv = conv2d(y, W(p + "to_qkv.weight"), W(p + "to_qkv.bias"))
            qkv = qkv.reshape(b, 3 * c, h * w).transpose(0, 2, 1)  # [B, HW, 3C]
            q, k, v = qkv[..., :c], qkv[..., c : 2 * c], qkv[..., 2 * c :]
            s = q @ k.transpose(0, 2, 1) / np.sqrt(c)
            s = np.exp(s - s.max(axis=-1, keepdims=True))
            s = s / s.sum(axis=-1, keepdims=True)
            o = (s @ v).transpose(0, 2, 1).reshape(b, c, h, w)
            return conv2d(o, W(p + "proj.weight"), W(p + "proj.bias")) + f

        return per_frame(x, one)

    def middle(self, p, x):
        x = self.residual(p + "middle.0.", x)
        x = self.attention(p + "middle.1.", x)
        return self.residual(p + "middle.2.", x)

    def head(self, p, x):
        x = silu(rms_norm(x, self.W(p + "head.0.gamma")))
        return self.cached_conv(p + "head.2", x)

    def upsample(self, p, x):
        W = self.W
        if W.has(p + "time_conv.weight"):
            i = self.idx
            if self.cache[i] is None:
                self.cache[i] = "Rep"
                self.idx += 1
            else:
                b, c, t, h, w = x.shape
                cache_x = x[:, :, -CACHE_T:].copy()
                rep = isinstance(self.cache[i], str)
                if cache_x.shape[2] < 2 and not rep:
                    cache_x = np.concatenate([self.cache[i][:, :, -1:], cache_x], axis=2)
                if cache_x.shape[2] < 2 and rep:
                    cache_x = np.concatenate([np.zeros_like(cache_x), cache_x], axis=2)
                if rep:
                    x = causal_conv3d(W, p + "time_conv", x)
                else:
                    x = causal_conv3d(W, p + "time_conv", x, self.cache[i])
                self.cache[i] = cache_x
                self.idx += 1
                x = x.reshape(b, 2, c, t, h, w)
                x = np.stack((x[:, 0], x[:, 1]), axis=3)
                x = x.reshape(b, c, t * 2, h, w)

        def up(f):
            f = f.repeat(2, axis=2).repeat(2, axis=3)
            f = np.pad(f, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="wrap" if CIRCULAR else "constant")
            return conv2d(f, W(p + "resample.1.weight"), W(p + "resample.1.bias"))

        return per_frame(x, up)

    def downsample(self, p, x):
        W = self.W

        def down(f):
            f = np.pad(f, ((0, 0), (0, 0), (0, 1), (0, 1)), mode="wrap" if CIRCULAR else "constant")
            return conv2d(f, W(p + "resample.1.weight"), W(p + "resample.1.bias"), 2)

        x = per_frame(x, down)
        if W.has(p + "time_conv.weight"):
            i = self.idx
            if self.cache[i] is None:
                self.cache[i] = x.copy()
                self.idx += 1
            else:
                cache_x = x[:, :, -1:].copy()
                x = causal_conv3d(
                    W, p + "time_conv", np.concatenate([self.cache[i][:, :, -1:], x], 2), None, 2
                )
                self.cache[i] = cache_x
                self.idx += 1
        return x

    def group(self, p, x, up):
        """Wan 2.2 Up_ResidualBlock / Down_ResidualBlock."""
        W = self.W
        x_copy = x
        sub = p + ("upsamples." if up else "downsamples.")
        j = 0
        while W.has(sub + "%d.residual.0.gamma" % j):
            x = self.residual(sub + "%d." % j, x)
            j += 1
        q = sub + "%d." % j
        resample = W.has(q + "resample.1.weight")
        ft = 2 if W.has(q + "time_conv.weight") else 1
        if up:
            if resample:
                x = self.upsample(q, x)
                x = x + dup_up(x_copy, x.shape[1], ft, 2, self.chunk == 0)
            return x
        if resample:
            x = self.downsample(q, x)
        return x + avg_down(x_copy, x.shape[1], ft, 2 if resample else 1)

    def blocks(self, p, x, up):
        nested = "%d." + ("upsamples" if up else "downsamples") + ".0.residual.0.gamma"
        if self.W.has(p + nested % 0):
            i = 0
            while self.W.has(p + nested % i):
                x = self.group(p + "%d." % i, x, up)
                i += 1
            return x
        i = 0
        while self.W.has(p + "%d.residual.0.gamma" % i) or self.W.has(
            p + "%d.resample.1.weight" % i
        ):
            q = p + "%d." % i
            if self.W.has(q + "residual.0.gamma"):
                x = self.residual(q, x)
            elif up:
                x = self.upsample(q, x)
            else:
                x = self.downsample(q, x)
            i += 1
        return x

    def decoder(self, x):
        x = self.cached_conv("decoder.conv1", x)
        x = self.middle("decoder.", x)
        x = self.blocks("decoder.upsamples.", x, True)
        return self.head("decoder.", x)

    def encoder(self, x):
        x = self.cached_conv("encoder.conv1", x)
        x = self.blocks("encoder.downsamples.", x, False)
        x = self.middle("encoder.", x)
        return self.head("encoder.", x)


def patch_size(W):
    return 2 if W.has("decoder.upsamples.0.upsamples.0.residual.0.gamma") else 1


def decode(W, z):
    net = Net(W)
    net.cache = [None] * 64
    x = causal_conv3d(W, "conv2", z)
    out = []
    for i in range(z.shape[2]):
        net.idx = 0
        net.chunk = i
        out.append(net.decoder(x[:, :, i : i + 1]))
    out = np.concatenate(out, axis=2)
    p = patch_size(W)
    return unpatchify(out, p) if p > 1 else out


def encode(W, x):
    net = Net(W)
    net.cache = [None] * 64
    p = patch_size(W)
    if p > 1:
        x = patchify(x, p)
    t = x.shape[2]
    out = []
    for i in range(1 + (t - 1) // 4):
        net.idx = 0
        net.chunk = i
        chunk = x[:, :, :1] if i == 0 else x[:, :, 1 + 4 * (i - 1) : 1 + 4 * i]
        out.append(net.encoder(chunk))
    out = causal_conv3d(W, "conv1", np.concatenate(out, axis=2))
    return out[:, : out.shape[1] // 2]  # the mean


def main():
    folder = sys.argv[1]
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    W = Weights(os.path.join(folder, "weights"), cfg.get("prefix", ""))
    global CIRCULAR
    CIRCULAR = bool(cfg.get("circular", False))
    # [F, C, H, W] -> [1, C, F, H, W]
    x = np.load(os.path.join(folder, "input.npy")).astype(np.float64)
    x = x.transpose(1, 0, 2, 3)[None]
    y = decode(W, x) if cfg["mode"] == "decode" else encode(W, x)
    y = y[0].transpose(1, 0, 2, 3)  # [F', C', H', W']
    y.astype("<f4").tofile(os.path.join(folder, "output.bin"))


if __name__ == "__main__":
    main()
