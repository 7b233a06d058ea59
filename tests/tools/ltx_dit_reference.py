#!/usr/bin/env python3
"""LTX-2's audio-video DiT (LTXAV) in plain numpy, float64, written from stable-diffusion.cpp's
ltxv.hpp (38a51f81) independently of ggdiff's C++: patchify (video tokens frame, row, column;
audio tokens of channel * 16 + bin), the embeddings connectors (registers filling short texts
to 1024 tokens, RMSNorm-attention-FF blocks, final RMSNorm), AdaLN-single modulations
(sigma * 1000; the av_ca ones on sigma), blocks with video / audio self attention, text cross
attention (with cross-attention AdaLN when prompt_scale_shift_table exists), audio-to-video and
video-to-audio attention and FFs, the output LayerNorm, modulation and projection. RoPE angles
are computed in float32 as the reference does (they reach 1e4 radians).

usage: ltx_dit_reference.py WEIGHTS.safetensors INPUTS.json OUT.f32
INPUTS: {"video": file, "video_shape": [C, F, H, W], "audio": file, "audio_shape": [8, T, 16],
         "context": file, "context_shape": [L, D], "sigma": s, "fps": f}
OUT: the video prediction [C, F, H, W] then the audio one [8, T, 16], float32.
"""
import json
import math
import struct
import sys

import numpy as np

W = {}


def load(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        W[name] = np.frombuffer(data[8 + n + a : 8 + n + b], dtype="<f4").reshape(info["shape"]).astype(np.float64)


def lin(x, p):
    y = x @ W[p + ".weight"].T
    if p + ".bias" in W:
        y = y + W[p + ".bias"]
    return y


def rms(x, eps=1e-6):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)


def silu(x):
    return x / (1.0 + np.exp(-x))


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def angles(coords, axes, dim, double=False):
    """coords [tokens, axes] (already / max_pos) -> angles [tokens, dim / 2]."""
    half, count = dim // 2, dim // (2 * axes)
    pad = half - count * axes
    if count == 1:
        freq = np.array([math.pi / 2])
    elif double:
        freq = np.exp(math.log(10000.0) * np.arange(count) / (count - 1)) * (math.pi / 2)
    else:
        ratio = np.arange(count, dtype=np.float32) / np.float32(count - 1)
        freq = (np.exp(np.float32(math.log(10000.0)) * ratio).astype(np.float32) * np.float32(math.pi / 2)).astype(np.float32)
    out = np.zeros((coords.shape[0], half), dtype=np.float64)
    for t in range(coords.shape[0]):
        vals = []
        for i in range(count):
            for a in range(axes):
                c = coords[t, a]
                if double:
                    vals.append(float(np.float32(freq[i] * (float(c) * 2.0 - 1.0))))
                else:
                    vals.append(float(np.float32(freq[i] * (np.float32(c) * np.float32(2.0) - np.float32(1.0)))))
        out[t, pad:] = vals
    return out


def rope(x, ang, heads):
    t, inner = x.shape
    d = inner // heads
    xh = x.reshape(t, heads, d)
    a = ang.reshape(t, heads, d // 2)
    c, s = np.cos(a), np.sin(a)
    x1, x2 = xh[..., : d // 2], xh[..., d // 2 :]
    return np.concatenate([x1 * c - x2 * s, x1 * s + x2 * c], axis=-1).reshape(t, inner)


def attention(p, x, ctx, heads, pe=None, kpe=None):
    if ctx is None:
        ctx = x
    q, k, v = lin(x, p + "to_q"), lin(ctx, p + "to_k"), lin(ctx, p + "to_v")
    q = rms(q, 1e-5) * W[p + "q_norm.weight"]
    k = rms(k, 1e-5) * W[p + "k_norm.weight"]
    if pe is not None:
        q = rope(q, pe, heads)
        k = rope(k, kpe if kpe is not None else pe, heads)
    inner = q.shape[1]
    d = inner // heads
    o = np.zeros_like(q)
    for h in range(heads):
        sl = slice(h * d, (h + 1) * d)
        lg = q[:, sl] @ k[:, sl].T / math.sqrt(d)
        lg -= lg.max(axis=1, keepdims=True)
        pr = np.exp(lg)
        pr /= pr.sum(axis=1, keepdims=True)
        o[:, sl] = pr @ v[:, sl]
    if p + "to_gate_logits.weight" in W:
        g = 2.0 / (1.0 + np.exp(-lin(x, p + "to_gate_logits")))  # [T, heads]
        o = (o.reshape(-1, heads, d) * g[:, :, None]).reshape(-1, inner)
    return lin(o, p + "to_out.0")


def ff(p, x):
    return lin(gelu_tanh(lin(x, p + "net.0.proj")), p + "net.2")


def temb(t, dim=256):
    half = dim // 2
    freqs = np.exp(-math.log(10000.0) * np.arange(half) / half)
    args = t * freqs
    return np.concatenate([np.cos(args), np.sin(args)])


def adaln(p, t, dim, rows):
    e = lin(silu(lin(temb(t), p + "emb.timestep_embedder.linear_1")), p + "emb.timestep_embedder.linear_2")
    return lin(silu(e), p + "linear").reshape(rows, dim), e


def connector(p, x):
    regs = W[p + "learnable_registers"]
    r = regs.shape[0]
    l = x.shape[0]
    if l < 1024:
        dup = (1024 + r - 1) // r
        x = np.concatenate([x, np.tile(regs, (dup, 1))[l : dup * r]])
    heads = W[p + "transformer_1d_blocks.0.attn1.to_gate_logits.bias"].shape[0]
    pos = (np.arange(x.shape[0]) / 4096.0)[:, None]
    pe = angles(pos, 1, x.shape[1], double=True)
    i = 0
    while f"{p}transformer_1d_blocks.{i}.attn1.to_q.weight" in W:
        b = f"{p}transformer_1d_blocks.{i}."
        x = x + attention(b + "attn1.", rms(x), None, heads, pe)
        x = x + ff(b + "ff.", rms(x))
        i += 1
    return rms(x)


def modulate(x, shift, scale):
    return x * (1.0 + scale) + shift


def main():
    load(sys.argv[1])
    cfg = json.load(open(sys.argv[2]))
    c, f, h, w = cfg["video_shape"]
    video = np.fromfile(cfg["video"], dtype="<f4").astype(np.float64).reshape(c, f, h, w)
    audio = np.fromfile(cfg["audio"], dtype="<f4").astype(np.float64).reshape(cfg["audio_shape"])
    ctx = np.fromfile(cfg["context"], dtype="<f4").astype(np.float64).reshape(cfg["context_shape"])
    sigma, fps = cfg["sigma"], np.float32(cfg["fps"])
    vd = W["patchify_proj.weight"].shape[0]
    ad = W["audio_patchify_proj.weight"].shape[0]
    vh = W["transformer_blocks.0.attn1.to_gate_logits.bias"].shape[0]
    ah = W["transformer_blocks.0.audio_attn1.to_gate_logits.bias"].shape[0]
    vctx_w = W["transformer_blocks.0.attn2.to_k.weight"].shape[1]
    cross = "transformer_blocks.0.prompt_scale_shift_table" in W
    rows = 9 if cross else 6

    vx = lin(video.reshape(c, -1).T, "patchify_proj")  # tokens frame, row, column
    steps = audio.shape[1]
    ax = lin(audio.transpose(1, 0, 2).reshape(steps, -1), "audio_patchify_proj")
    v_ctx, a_ctx = ctx[:, :vctx_w], ctx[:, vctx_w:]
    if ctx.shape[0] < 1024:
        v_ctx = connector("video_embeddings_connector.", v_ctx)
        a_ctx = connector("audio_embeddings_connector.", a_ctx)

    # Positions, as the reference builds them (float32).
    def sec(corner):
        return np.float32(max(0.0, corner * 8 + 1.0 - 8.0)) / fps

    vcoords, tcoords = [], []
    for t in range(f):
        ct = np.float32(0.5) * (sec(t) + sec(t + 1))
        for y in range(h):
            for x in range(w):
                vcoords.append([ct / np.float32(20), np.float32(y * 32 + 16) / np.float32(2048),
                                np.float32(x * 32 + 16) / np.float32(2048)])
                tcoords.append([ct / np.float32(20)])
    v_pe = angles(np.array(vcoords, dtype=np.float32), 3, vd)
    actx_w = W["transformer_blocks.0.audio_attn2.to_k.weight"].shape[1]
    v_tpe = angles(np.array(tcoords, dtype=np.float32), 1, actx_w)

    def astart(t):
        return np.float32(max(0.0, t * 4 + 1.0 - 4.0)) * np.float32(160) / np.float32(16000)

    acoords = np.array([[(np.float32(0.5) * (astart(t) + astart(t + 1))) / np.float32(20)] for t in range(steps)], dtype=np.float32)
    a_pe = angles(acoords, 1, ad)
    a_pe_cross = angles(acoords, 1, actx_w)

    ts = sigma * 1000.0
    v_mod, v_emb = adaln("adaln_single.", ts, vd, rows)
    a_mod, a_emb = adaln("audio_adaln_single.", ts, ad, rows)
    if cross:
        vp_mod = adaln("prompt_adaln_single.", ts, vd, 2)[0]
        ap_mod = adaln("audio_prompt_adaln_single.", ts, ad, 2)[0]
    av_v = adaln("av_ca_video_scale_shift_adaln_single.", sigma, vd, 4)[0]
    a2v_g = adaln("av_ca_a2v_gate_adaln_single.", sigma, vd, 1)[0]
    av_a = adaln("av_ca_audio_scale_shift_adaln_single.", sigma, ad, 4)[0]
    v2a_g = adaln("av_ca_v2a_gate_adaln_single.", sigma, ad, 1)[0]

    def text_ca(b, attn, table, ptable, x, context, mod, pmod, heads):
        if not cross:
            return attention(b + attn, rms(x), context, heads)
        m = W[b + table] + mod
        q = modulate(rms(x), m[6], m[7])
        pm = W[b + ptable] + pmod
        cm = modulate(context, pm[0], pm[1])
        return attention(b + attn, q, cm, heads) * m[8]

    i = 0
    while f"transformer_blocks.{i}.attn1.to_q.weight" in W:
        b = f"transformer_blocks.{i}."
        vm = W[b + "scale_shift_table"] + v_mod
        am = W[b + "audio_scale_shift_table"] + a_mod
        vx = vx + attention(b + "attn1.", modulate(rms(vx), vm[0], vm[1]), None, vh, v_pe) * vm[2]
        vx = vx + text_ca(b, "attn2.", "scale_shift_table", "prompt_scale_shift_table", vx, v_ctx,
                          v_mod, vp_mod if cross else None, vh)
        ax = ax + attention(b + "audio_attn1.", modulate(rms(ax), am[0], am[1]), None, ah, a_pe) * am[2]
        ax = ax + text_ca(b, "audio_attn2.", "audio_scale_shift_table", "audio_prompt_scale_shift_table",
                          ax, a_ctx, a_mod, ap_mod if cross else None, ah)
        vn, an = rms(vx), rms(ax)
        tv = W[b + "scale_shift_table_a2v_ca_video"]
        ta = W[b + "scale_shift_table_a2v_ca_audio"]
        mv = tv[:4] + av_v
        ma = ta[:4] + av_a
        o = attention(b + "audio_to_video_attn.", modulate(vn, mv[1], mv[0]), modulate(an, ma[1], ma[0]),
                      ah, v_tpe, a_pe_cross)
        vx = vx + o * (tv[4] + a2v_g[0])
        o = attention(b + "video_to_audio_attn.", modulate(an, ma[3], ma[2]), modulate(vn, mv[3], mv[2]),
                      ah, a_pe_cross, v_tpe)
        ax = ax + o * (ta[4] + v2a_g[0])
        ax = ax + ff(b + "audio_ff.", modulate(rms(ax), am[3], am[4])) * am[5]
        vx = vx + ff(b + "ff.", modulate(rms(vx), vm[3], vm[4])) * vm[5]
        i += 1

    def out(x, table, emb, proj):
        x = (x - x.mean(axis=-1, keepdims=True)) / np.sqrt(x.var(axis=-1, keepdims=True) + 1e-6)
        tb = W[table]
        return lin(modulate(x, tb[0] + emb, tb[1] + emb), proj)

    vo = out(vx, "scale_shift_table", v_emb, "proj_out")  # [tokens, C]
    ao = out(ax, "audio_scale_shift_table", a_emb, "audio_proj_out")  # [steps, 128]
    vo = vo.T.reshape(-1, f, h, w)
    ao = ao.reshape(steps, 8, 16).transpose(1, 0, 2)
    with open(sys.argv[3], "wb") as fo:
        fo.write(vo.astype("<f4").tobytes())
        fo.write(ao.astype("<f4").tobytes())


if __name__ == "__main__":
    main()
