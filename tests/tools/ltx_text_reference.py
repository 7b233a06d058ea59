#!/usr/bin/env python3
"""LTX-2's text path in plain numpy, float64: Gemma 3 (Hugging Face Gemma3TextModel, names
"model.*", RMSNorm scaling by 1 + w) with every hidden state kept, then LTX-2.3's per-token RMS
normalization of each state, the states interleaved per feature (f = h * states + s) and the two
aggregate projections (x * sqrt(out / hidden), with bias), concatenated. Written from the model
definitions (transformers' Gemma3 modeling, stable-diffusion.cpp's LTXAVEmbedder), independently
of ggdiff's C++.

Gemma 3: embeddings times sqrt(hidden); per layer x += post_attention_layernorm(attn(
input_layernorm(x))), x += post_feedforward_layernorm(mlp(pre_feedforward_layernorm(x))); q/k
RMSNorm per head; NeoX RoPE (pairs i, i + d/2); layer i global when i % 6 == 5 (theta 1e6,
positions / 8), else local (theta 1e4); causal attention with 1/sqrt(head_dim); grouped
key/value heads; MLP down(gelu_tanh(gate) * up); eps 1e-6.

usage: ltx_text_reference.py WEIGHTS.safetensors CONFIG.json OUT.f32
CONFIG: {"ids": [...], "head_dim": 256, "heads": H, "kv_heads": K, optional "window": W (the
sliding window of the local layers; default 1024)}
OUT: the states [S, T, hidden] then the projected context [T, video + audio], float32.
"""
import json
import math
import struct
import sys

import numpy as np


def load_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", name
        a, b = info["data_offsets"]
        out[name] = np.frombuffer(data[base + a : base + b], dtype="<f4").reshape(info["shape"]).astype(np.float64)
    return out


def rms(x, w, eps=1e-6):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * (1.0 + w)


def rope(x, pos, theta, scale):
    # x [T, heads, d]; NeoX pairs (i, i + d/2).
    d = x.shape[-1]
    half = d // 2
    inv = theta ** (-np.arange(half, dtype=np.float64) * 2.0 / d)
    ang = (pos[:, None] / scale) * inv[None, :]  # [T, half]
    c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * c - x2 * s, x1 * s + x2 * c], axis=-1)


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def main():
    w = load_safetensors(sys.argv[1])
    cfg = json.load(open(sys.argv[2]))
    ids = np.array(cfg["ids"])
    d, nh, nkv = cfg["head_dim"], cfg["heads"], cfg["kv_heads"]
    emb = w["model.embed_tokens.weight"]
    hidden = emb.shape[1]
    layers = 0
    while f"model.layers.{layers}.self_attn.q_proj.weight" in w:
        layers += 1
    t = len(ids)
    pos = np.arange(t, dtype=np.float64)
    x = emb[ids] * np.float64(np.float32(math.sqrt(hidden)))
    states = [x]
    causal = np.triu(np.full((t, t), -np.inf), 1)
    window = cfg.get("window", 1024)
    local_mask = causal + np.tril(np.full((t, t), -np.inf), -window)  # keys i - j >= window
    for i in range(layers):
        p = f"model.layers.{i}."
        glob = i % 6 == 5
        theta, scale = (1e6, 8.0) if glob else (1e4, 1.0)
        a = rms(x, w[p + "input_layernorm.weight"])
        q = (a @ w[p + "self_attn.q_proj.weight"].T).reshape(t, nh, d)
        k = (a @ w[p + "self_attn.k_proj.weight"].T).reshape(t, nkv, d)
        v = (a @ w[p + "self_attn.v_proj.weight"].T).reshape(t, nkv, d)
        q = rope(rms(q, w[p + "self_attn.q_norm.weight"]), pos, theta, scale)
        k = rope(rms(k, w[p + "self_attn.k_norm.weight"]), pos, theta, scale)
        rep = nh // nkv
        k = np.repeat(k, rep, axis=1)
        v = np.repeat(v, rep, axis=1)
        o = np.zeros((t, nh, d))
        for hh in range(nh):
            logits = q[:, hh, :] @ k[:, hh, :].T / math.sqrt(d) + (causal if glob else local_mask)
            logits -= logits.max(axis=1, keepdims=True)
            pr = np.exp(logits)
            pr /= pr.sum(axis=1, keepdims=True)
            o[:, hh, :] = pr @ v[:, hh, :]
        a = o.reshape(t, nh * d) @ w[p + "self_attn.o_proj.weight"].T
        x = x + rms(a, w[p + "post_attention_layernorm.weight"])
        a = rms(x, w[p + "pre_feedforward_layernorm.weight"])
        g = gelu_tanh(a @ w[p + "mlp.gate_proj.weight"].T) * (a @ w[p + "mlp.up_proj.weight"].T)
        a = g @ w[p + "mlp.down_proj.weight"].T
        x = x + rms(a, w[p + "post_feedforward_layernorm.weight"])
        if i + 1 < layers:
            states.append(x)
    states.append(rms(x, w["model.norm.weight"]))
    st = np.stack(states)  # [S, T, H]
    s = st.shape[0]
    normed = st / np.sqrt(np.mean(st * st, axis=-1, keepdims=True) + 1e-6)
    feats = normed.transpose(1, 2, 0).reshape(t, hidden * s)  # f = h * S + s
    outs = []
    for name in ("video_aggregate_embed", "audio_aggregate_embed"):
        wt = w[f"text_embedding_projection.{name}.weight"]
        b = w[f"text_embedding_projection.{name}.bias"]
        outs.append(feats * math.sqrt(wt.shape[0] / hidden) @ wt.T + b)
    ctx = np.concatenate(outs, axis=1)
    with open(sys.argv[3], "wb") as f:
        f.write(st.astype("<f4").tobytes())
        f.write(ctx.astype("<f4").tobytes())


if __name__ == "__main__":
    main()
