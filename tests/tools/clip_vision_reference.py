#!/usr/bin/env python3
"""Float64 numpy forward of a CLIP vision tower (HF CLIPVisionModel layout), written from the
Hugging Face model (CLIPVisionEmbeddings, CLIPEncoderLayer) and the reference engine's
clip_preprocess, independently of src/models/te/clip_vision.

The image is preprocessed as the reference does it: scaled (nearest neighbour, source pixel
floor(i * in / out)) by the larger of size / width and size / height, the centre size x size
kept, values in [0, 1] clamped and normalized with CLIP's mean and std. The output is the last
layer's hidden states without the post-layernorm (what Wan's image-to-video reads).

usage: clip_vision_reference.py WEIGHTS.safetensors PREFIX IMAGE.u8 W H HEADS GELU OUT.f32
  PREFIX: the tower's names up to and including "vision_model."
  IMAGE.u8: the RGB image, uint8, row-major [H][W][3]
  GELU: "erf" (exact GELU), "quick" (x * sigmoid(1.702 x)) or "quick_f16": quick GELU as
        ggml computes it on the CPU, from a table indexed by the input rounded to f16 and
        holding f16 results
  OUT.f32: float32 [positions][width]
"""
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qwen_vision_reference import load  # noqa: E402  (safetensors -> float64 arrays)

EPS = 1e-5
MEAN = np.array([0.48145466, 0.4578275, 0.40821073])
STD = np.array([0.26862954, 0.26130258, 0.27577711])


def preprocess(img, size):
    """img [H][W][3] uint8 -> [3][size][size]."""
    h, w = img.shape[:2]
    scale = max(np.float32(size) / np.float32(w), np.float32(size) / np.float32(h))
    rw = max(size, int(np.float32(scale) * np.float32(w)))
    rh = max(size, int(np.float32(scale) * np.float32(h)))
    ox, oy = (rw - size) // 2, (rh - size) // 2
    ys = [(y + oy) * h // rh for y in range(size)]
    xs = [(x + ox) * w // rw for x in range(size)]
    crop = img[np.ix_(ys, xs)].astype(np.float64) / 255.0
    crop = np.clip(crop, 0.0, 1.0)
    return ((crop - MEAN) / STD).transpose(2, 0, 1)


def layer_norm(x, w, b):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + EPS) * w + b


def linear(x, t, name):
    return x @ t[name + ".weight"].T + t[name + ".bias"]


def gelu_erf(x):
    erf = np.vectorize(math.erf)
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def gelu_quick(x):
    return x / (1.0 + np.exp(-1.702 * x))


def gelu_quick_f16(x):
    x = x.astype(np.float16).astype(np.float64)
    return gelu_quick(x).astype(np.float16).astype(np.float64)


def forward(t, pixels, heads, act):
    conv = t["embeddings.patch_embedding.weight"]  # [width, 3, p, p]
    width, _, p, _ = conv.shape
    g = pixels.shape[1] // p
    # Patches in raster order, each flattened as the kernel is: [g*g, 3*p*p].
    patches = pixels.reshape(3, g, p, g, p).transpose(1, 3, 0, 2, 4).reshape(g * g, 3 * p * p)
    x = patches @ conv.reshape(width, -1).T
    x = np.concatenate([t["embeddings.class_embedding"][None, :], x], axis=0)
    x = x + t["embeddings.position_embedding.weight"]
    x = layer_norm(x, t["pre_layrnorm.weight"], t["pre_layrnorm.bias"])
    d = width // heads
    i = 0
    while "encoder.layers.%d.mlp.fc1.weight" % i in t:
        b = "encoder.layers.%d." % i
        h = layer_norm(x, t[b + "layer_norm1.weight"], t[b + "layer_norm1.bias"])
        q, k, v = (linear(h, t, b + "self_attn." + n + "_proj") for n in "qkv")
        n = x.shape[0]
        q, k, v = (a.reshape(n, heads, d).transpose(1, 0, 2) for a in (q, k, v))
        s = q @ k.transpose(0, 2, 1) / math.sqrt(d)
        s = np.exp(s - s.max(axis=-1, keepdims=True))
        s /= s.sum(axis=-1, keepdims=True)
        o = (s @ v).transpose(1, 0, 2).reshape(n, width)
        x = x + linear(o, t, b + "self_attn.out_proj")
        h = layer_norm(x, t[b + "layer_norm2.weight"], t[b + "layer_norm2.bias"])
        h = act(linear(h, t, b + "mlp.fc1"))
        x = x + linear(h, t, b + "mlp.fc2")
        i += 1
    return x


def main():
    weights, prefix, image, w, h, heads, gelu, out = sys.argv[1:9]
    t = load(weights, prefix)
    img = np.fromfile(image, dtype=np.uint8).reshape(int(h), int(w), 3)
    n = t["embeddings.position_embedding.weight"].shape[0]
    p = t["embeddings.patch_embedding.weight"].shape[2]
    size = int(round(math.sqrt(n - 1))) * p
    act = {"erf": gelu_erf, "quick": gelu_quick, "quick_f16": gelu_quick_f16}[gelu]
    x = forward(t, preprocess(img, size), int(heads), act)
    x.astype(np.float32).tofile(out)


if __name__ == "__main__":
    main()
