"""The decoder half of SD1's KL autoencoder (CompVis/LDM layout).

Names mirror the checkpoint's `first_stage_model.post_quant_conv.*` and
`first_stage_model.decoder.*` tensors.
"""
import torch.nn.functional as F
from torch import nn

from layers import Upsample, attention, conv2d, group_norm

SCALE_FACTOR = 0.18215  # SD1's latent scale: latents are divided by it before decoding
EPS = 1e-6  # every GroupNorm of the LDM autoencoder


class ResnetBlock(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.norm1 = group_norm(cin, EPS)
        self.conv1 = conv2d(cin, cout, 3)
        self.norm2 = group_norm(cout, EPS)
        self.conv2 = conv2d(cout, cout, 3)
        self.nin_shortcut = conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x):
        h = self.conv1(F.silu(self.norm1(x)))
        h = self.conv2(F.silu(self.norm2(h)))
        return self.nin_shortcut(x) + h


class AttnBlock(nn.Module):
    """Single-head self-attention over the pixels, 1x1 conv projections."""

    def __init__(self, channels):
        super().__init__()
        self.norm = group_norm(channels, EPS)
        self.q, self.k, self.v = (conv2d(channels, channels, 1) for _ in range(3))
        self.proj_out = conv2d(channels, channels, 1)

    def forward(self, x):
        b, c, h, w = x.shape
        normed = self.norm(x)
        q, k, v = (proj(normed).flatten(2).transpose(1, 2) for proj in (self.q, self.k, self.v))
        out = attention(q, k, v, heads=1)
        return x + self.proj_out(out.transpose(1, 2).reshape(b, c, h, w))


class Mid(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.block_1 = ResnetBlock(channels, channels)
        self.attn_1 = AttnBlock(channels)
        self.block_2 = ResnetBlock(channels, channels)

    def forward(self, x):
        return self.block_2(self.attn_1(self.block_1(x)))


class UpLevel(nn.Module):
    """Resnet blocks at one resolution, then a 2x upsample (except at the last level)."""

    def __init__(self, cin, cout, blocks, upsample):
        super().__init__()
        self.block = nn.Sequential(*[ResnetBlock(cin if i == 0 else cout, cout)
                                     for i in range(blocks)])
        if upsample:
            self.upsample = Upsample(cout)

    def forward(self, x):
        x = self.block(x)
        return self.upsample(x) if hasattr(self, "upsample") else x


class Decoder(nn.Module):
    def __init__(self, latent_channels=4, base=128, channel_mult=(1, 2, 4, 4),
                 num_res_blocks=2, out_channels=3):
        super().__init__()
        ch = base * channel_mult[-1]
        self.conv_in = conv2d(latent_channels, ch, 3)
        self.mid = Mid(ch)
        # up[i] works at level i; they run from the deepest level (smallest image) up.
        levels = [None] * len(channel_mult)
        for i in reversed(range(len(channel_mult))):
            levels[i] = UpLevel(ch, base * channel_mult[i], num_res_blocks + 1, upsample=i != 0)
            ch = base * channel_mult[i]
        self.up = nn.ModuleList(levels)
        self.norm_out = group_norm(ch, EPS)
        self.conv_out = conv2d(ch, out_channels, 3)

    def forward(self, z):
        h = self.mid(self.conv_in(z))
        for level in reversed(self.up):
            h = level(h)
        return self.conv_out(F.silu(self.norm_out(h)))


class VaeDecoder(nn.Module):
    """Scaled latent (B,4,h,w) -> image (B,3,8h,8w) in about [-1, 1]."""

    def __init__(self):
        super().__init__()
        self.post_quant_conv = conv2d(4, 4, 1)
        self.decoder = Decoder()

    def forward(self, latent):
        return self.decoder(self.post_quant_conv(latent / SCALE_FACTOR))
