"""Building blocks shared by the UNet and the VAE decoder.

Layers are created on the "meta" device: they carry shapes but no storage, so building
the 860M-parameter UNet costs nothing and no random init is computed only to be thrown
away; weights.load_strict() then gives every parameter its real tensor.
"""
import torch
import torch.nn.functional as F
from torch import nn

META = torch.device("meta")

# Upper bound on one block of attention scores; larger query sets are processed in row
# chunks (exact, since softmax is per row). At 64x64 latents the UNet's first level has
# 4096 tokens: full scores for batch 2 x 8 heads would take 1 GiB.
SCORE_BUDGET_BYTES = 256 << 20


def conv2d(cin, cout, kernel, stride=1):
    return nn.Conv2d(cin, cout, kernel, stride=stride, padding=kernel // 2, device=META)


def linear(cin, cout, bias=True):
    return nn.Linear(cin, cout, bias=bias, device=META)


def group_norm(channels, eps):
    return nn.GroupNorm(32, channels, eps=eps, device=META)


def layer_norm(channels):
    return nn.LayerNorm(channels, device=META)


def attention(q, k, v, heads, budget=SCORE_BUDGET_BYTES):
    """Multi-head softmax(q k^T / sqrt(d)) v on (batch, tokens, channels) tensors.

    torch 1.13 has no fused scaled_dot_product_attention; bmm + softmax is its fastest
    CPU path.
    """
    batch, n, channels = q.shape
    d = channels // heads
    q, k, v = (_split_heads(t, heads) for t in (q, k, v))
    q = q * d**-0.5  # scaling q is cheaper than scaling the (n x m) scores
    kt = k.transpose(1, 2)
    out = torch.empty_like(q)
    rows = max(1, budget // (q.shape[0] * k.shape[1] * q.element_size()))
    for start in range(0, n, rows):
        scores = torch.bmm(q[:, start:start + rows], kt)
        out[:, start:start + rows] = torch.bmm(scores.softmax(dim=-1), v)
    return out.reshape(batch, heads, n, d).transpose(1, 2).reshape(batch, n, channels)


def _split_heads(t, heads):
    batch, tokens, channels = t.shape
    t = t.reshape(batch, tokens, heads, channels // heads).transpose(1, 2)
    return t.reshape(batch * heads, tokens, channels // heads)


class Upsample(nn.Module):
    """Nearest-neighbour 2x, then a 3x3 conv (the same in the UNet and the VAE)."""

    def __init__(self, channels):
        super().__init__()
        self.conv = conv2d(channels, channels, 3)

    def forward(self, x):
        return self.conv(F.interpolate(x, scale_factor=2.0, mode="nearest"))
