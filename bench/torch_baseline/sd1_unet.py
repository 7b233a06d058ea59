"""The SD1.x UNet in the original CompVis/LDM layout.

Module and attribute names mirror the checkpoint's `model.diffusion_model.*` tensor
names, so the state-dict names of this model are exactly the file's names without the
prefix (nn.Identity fills the dropout slots that shift LDM's indices).
"""
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from layers import Upsample, attention, conv2d, group_norm, layer_norm, linear


@dataclass(frozen=True)
class UNetConfig:
    in_channels: int = 4
    model_channels: int = 320
    channel_mult: tuple = (1, 2, 4, 4)
    num_res_blocks: int = 2
    attention_levels: tuple = (0, 1, 2)
    heads: int = 8
    context_dim: int = 768


SD1 = UNetConfig()


def timestep_embedding(t, dim):
    """LDM's sinusoidal embedding: cos then sin of t at geometric frequencies."""
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32) / half)
    args = t.float()[:, None] * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


class ResBlock(nn.Module):
    def __init__(self, cin, cout, emb_dim):
        super().__init__()
        self.in_layers = nn.Sequential(group_norm(cin, 1e-5), nn.SiLU(), conv2d(cin, cout, 3))
        self.emb_layers = nn.Sequential(nn.SiLU(), linear(emb_dim, cout))
        self.out_layers = nn.Sequential(group_norm(cout, 1e-5), nn.SiLU(), nn.Identity(),
                                        conv2d(cout, cout, 3))
        self.skip_connection = conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x, emb):
        h = self.in_layers(x) + self.emb_layers(emb)[:, :, None, None]
        return self.skip_connection(x) + self.out_layers(h)


class CrossAttention(nn.Module):
    """Self-attention when no context is given, else attention to the text context."""

    def __init__(self, dim, context_dim, heads):
        super().__init__()
        self.heads = heads
        self.to_q = linear(dim, dim, bias=False)
        self.to_k = linear(context_dim, dim, bias=False)
        self.to_v = linear(context_dim, dim, bias=False)
        self.to_out = nn.Sequential(linear(dim, dim))

    def forward(self, x, context=None):
        context = x if context is None else context
        out = attention(self.to_q(x), self.to_k(context), self.to_v(context), self.heads)
        return self.to_out(out)


class GEGLU(nn.Module):
    def __init__(self, dim, inner):
        super().__init__()
        self.proj = linear(dim, 2 * inner)

    def forward(self, x):
        value, gate = self.proj(x).chunk(2, dim=-1)
        return value * F.gelu(gate)


class FeedForward(nn.Module):
    def __init__(self, dim, mult=4):
        super().__init__()
        self.net = nn.Sequential(GEGLU(dim, mult * dim), nn.Identity(), linear(mult * dim, dim))

    def forward(self, x):
        return self.net(x)


class BasicTransformerBlock(nn.Module):
    def __init__(self, dim, heads, context_dim):
        super().__init__()
        self.attn1 = CrossAttention(dim, dim, heads)
        self.ff = FeedForward(dim)
        self.attn2 = CrossAttention(dim, context_dim, heads)
        self.norm1, self.norm2, self.norm3 = layer_norm(dim), layer_norm(dim), layer_norm(dim)

    def forward(self, x, context):
        x = x + self.attn1(self.norm1(x))
        x = x + self.attn2(self.norm2(x), context)
        return x + self.ff(self.norm3(x))


class SpatialTransformer(nn.Module):
    """SD1's transformer over the pixels of a feature map (1x1 conv projections)."""

    def __init__(self, channels, heads, context_dim):
        super().__init__()
        self.norm = group_norm(channels, 1e-6)  # LDM's Normalize(): eps 1e-6, unlike ResBlock
        self.proj_in = conv2d(channels, channels, 1)
        self.transformer_blocks = nn.ModuleList(
            [BasicTransformerBlock(channels, heads, context_dim)])
        self.proj_out = conv2d(channels, channels, 1)

    def forward(self, x, context):
        b, c, h, w = x.shape
        tokens = self.proj_in(self.norm(x)).flatten(2).transpose(1, 2)
        for block in self.transformer_blocks:
            tokens = block(tokens, context)
        return x + self.proj_out(tokens.transpose(1, 2).reshape(b, c, h, w))


class Downsample(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.op = conv2d(channels, channels, 3, stride=2)

    def forward(self, x):
        return self.op(x)


class Step(nn.ModuleList):
    """One entry of input_blocks / output_blocks (LDM's TimestepEmbedSequential): its
    layers run in order, each given the extra input it needs."""

    def forward(self, x, emb, context):
        for layer in self:
            if isinstance(layer, ResBlock):
                x = layer(x, emb)
            elif isinstance(layer, SpatialTransformer):
                x = layer(x, context)
            else:
                x = layer(x)
        return x


class UNet(nn.Module):
    def __init__(self, cfg=SD1):
        super().__init__()
        base = cfg.model_channels
        emb_dim = 4 * base
        self.model_channels = base
        self.time_embed = nn.Sequential(linear(base, emb_dim), nn.SiLU(), linear(emb_dim, emb_dim))

        def transformer(ch):
            return SpatialTransformer(ch, cfg.heads, cfg.context_dim)

        # Encoder half; `skips` records the channels each entry hands to the decoder half.
        self.input_blocks = nn.ModuleList([Step([conv2d(cfg.in_channels, base, 3)])])
        skips, ch = [base], base
        last_level = len(cfg.channel_mult) - 1
        for level, mult in enumerate(cfg.channel_mult):
            for _ in range(cfg.num_res_blocks):
                layers = [ResBlock(ch, mult * base, emb_dim)]
                ch = mult * base
                if level in cfg.attention_levels:
                    layers.append(transformer(ch))
                self.input_blocks.append(Step(layers))
                skips.append(ch)
            if level != last_level:
                self.input_blocks.append(Step([Downsample(ch)]))
                skips.append(ch)

        self.middle_block = Step([ResBlock(ch, ch, emb_dim), transformer(ch),
                                  ResBlock(ch, ch, emb_dim)])

        # Decoder half: one more block per level than the encoder, each taking a skip.
        self.output_blocks = nn.ModuleList()
        for level, mult in reversed(list(enumerate(cfg.channel_mult))):
            for i in range(cfg.num_res_blocks + 1):
                layers = [ResBlock(ch + skips.pop(), mult * base, emb_dim)]
                ch = mult * base
                if level in cfg.attention_levels:
                    layers.append(transformer(ch))
                if level != 0 and i == cfg.num_res_blocks:
                    layers.append(Upsample(ch))
                self.output_blocks.append(Step(layers))

        self.out = nn.Sequential(group_norm(ch, 1e-5), nn.SiLU(),
                                 conv2d(ch, cfg.in_channels, 3))

    def forward(self, x, timesteps, context):
        """Predicted noise for latents x (B,4,H,W), timesteps (B,), context (B,77,768)."""
        emb = self.time_embed(timestep_embedding(timesteps, self.model_channels))
        skips = []
        for block in self.input_blocks:
            x = block(x, emb, context)
            skips.append(x)
        x = self.middle_block(x, emb, context)
        for block in self.output_blocks:
            x = block(torch.cat([x, skips.pop()], dim=1), emb, context)
        return self.out(x)
