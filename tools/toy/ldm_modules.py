"""PyTorch modules of the toy model in the SD1 checkpoint layout that ggdiff loads: a CLIP-style
text transformer (HF names), the LDM UNet (openaimodel names) and the LDM KL autoencoder.
Attribute names are chosen so that state_dict() keys are the canonical tensor names, and
the numerics follow what ggdiff computes for these layouts (GroupNorm eps 1e-6, tanh GELU in
the UNet's GEGLU, exact GELU in a CLIP that is not 768 wide, cos-first timestep features).
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

GN_EPS = 1e-6


def group_norm(ch):
    return nn.GroupNorm(32, ch, eps=GN_EPS)


# ---------------------------------------------------------------------------------------
# Text encoder: HF CLIPTextModel layout under "text_model."


class ClipAttention(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.q_proj, self.k_proj, self.v_proj, self.out_proj = (nn.Linear(d, d) for _ in range(4))
        self.heads = max(1, d // 64)

    def forward(self, x, mask):
        b, t, d = x.shape
        h = self.heads

        def split(y):
            return y.view(b, t, h, d // h).transpose(1, 2)

        q, k, v = split(self.q_proj(x)), split(self.k_proj(x)), split(self.v_proj(x))
        a = (q @ k.transpose(-1, -2)) / math.sqrt(d // h) + mask
        y = (a.softmax(-1) @ v).transpose(1, 2).reshape(b, t, d)
        return self.out_proj(y)


class ClipMlp(nn.Module):
    def __init__(self, d, inner):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(d, inner), nn.Linear(inner, d)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class ClipLayer(nn.Module):
    def __init__(self, d, inner):
        super().__init__()
        self.layer_norm1, self.layer_norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.self_attn, self.mlp = ClipAttention(d), ClipMlp(d, inner)

    def forward(self, x, mask):
        x = x + self.self_attn(self.layer_norm1(x), mask)
        return x + self.mlp(self.layer_norm2(x))


class ClipEmbeddings(nn.Module):
    def __init__(self, vocab, d, positions):
        super().__init__()
        self.token_embedding = nn.Embedding(vocab, d)
        self.position_embedding = nn.Embedding(positions, d)


class ClipEncoder(nn.Module):
    def __init__(self, d, inner, layers):
        super().__init__()
        self.layers = nn.ModuleList(ClipLayer(d, inner) for _ in range(layers))


class TextModel(nn.Module):
    def __init__(self, d=64, inner=256, layers=4, vocab=49408, positions=77):
        super().__init__()
        self.embeddings = ClipEmbeddings(vocab, d, positions)
        self.encoder = ClipEncoder(d, inner, layers)
        self.final_layer_norm = nn.LayerNorm(d)

    def forward(self, ids):
        t = ids.shape[1]
        x = self.embeddings.token_embedding(ids) + self.embeddings.position_embedding.weight[:t]
        mask = torch.full((t, t), float("-inf"), device=ids.device).triu(1)
        for layer in self.encoder.layers:
            x = layer(x, mask)
        return self.final_layer_norm(x)


class ClipTransformer(nn.Module):
    """cond_stage_model.transformer.text_model.*"""

    def __init__(self, **kw):
        super().__init__()
        self.text_model = TextModel(**kw)

    def forward(self, ids):
        return self.text_model(ids)


# ---------------------------------------------------------------------------------------
# UNet: ldm.modules.diffusionmodules.openaimodel layout


def timestep_features(t, dim, max_period=10000):
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, dtype=torch.float32) / half)
    args = t.float()[:, None] * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


class ResBlock(nn.Module):
    def __init__(self, cin, cout, emb_dim):
        super().__init__()
        self.in_layers = nn.Sequential(group_norm(cin), nn.SiLU(), nn.Conv2d(cin, cout, 3, padding=1))
        self.emb_layers = nn.Sequential(nn.SiLU(), nn.Linear(emb_dim, cout))
        self.out_layers = nn.Sequential(group_norm(cout), nn.SiLU(), nn.Identity(),
                                        nn.Conv2d(cout, cout, 3, padding=1))
        self.skip_connection = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x, emb):
        h = self.in_layers(x) + self.emb_layers(emb)[:, :, None, None]
        return self.skip_connection(x) + self.out_layers(h)


class CrossAttention(nn.Module):
    def __init__(self, dim, ctx_dim, heads):
        super().__init__()
        self.to_q = nn.Linear(dim, dim, bias=False)
        self.to_k = nn.Linear(ctx_dim, dim, bias=False)
        self.to_v = nn.Linear(ctx_dim, dim, bias=False)
        self.to_out = nn.ModuleList([nn.Linear(dim, dim)])
        self.heads = heads

    def forward(self, x, ctx):
        b, t, d = x.shape
        h = self.heads

        def split(y):
            return y.view(b, y.shape[1], h, d // h).transpose(1, 2)

        q, k, v = split(self.to_q(x)), split(self.to_k(ctx)), split(self.to_v(ctx))
        a = ((q @ k.transpose(-1, -2)) / math.sqrt(d // h)).softmax(-1)
        return self.to_out[0]((a @ v).transpose(1, 2).reshape(b, t, d))


class GegluProj(nn.Module):
    def __init__(self, dim, inner):
        super().__init__()
        self.proj = nn.Linear(dim, inner * 2)

    def forward(self, x):
        val, gate = self.proj(x).chunk(2, dim=-1)
        return val * F.gelu(gate, approximate="tanh")


class FeedForward(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.net = nn.ModuleList([GegluProj(dim, 4 * dim), nn.Identity(), nn.Linear(4 * dim, dim)])

    def forward(self, x):
        return self.net[2](self.net[0](x))


class BasicBlock(nn.Module):
    def __init__(self, dim, ctx_dim, heads):
        super().__init__()
        self.norm1, self.norm2, self.norm3 = nn.LayerNorm(dim), nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn1 = CrossAttention(dim, dim, heads)
        self.attn2 = CrossAttention(dim, ctx_dim, heads)
        self.ff = FeedForward(dim)

    def forward(self, x, ctx):
        h = self.norm1(x)
        x = x + self.attn1(h, h)
        x = x + self.attn2(self.norm2(x), ctx)
        return x + self.ff(self.norm3(x))


class SpatialTransformer(nn.Module):
    def __init__(self, ch, ctx_dim, depth):
        super().__init__()
        self.norm = group_norm(ch)
        self.proj_in = nn.Conv2d(ch, ch, 1)
        self.transformer_blocks = nn.ModuleList(BasicBlock(ch, ctx_dim, ch // 64) for _ in range(depth))
        self.proj_out = nn.Conv2d(ch, ch, 1)

    def forward(self, x, ctx):
        b, c, hh, ww = x.shape
        t = self.proj_in(self.norm(x)).flatten(2).transpose(1, 2)
        for blk in self.transformer_blocks:
            t = blk(t, ctx)
        return x + self.proj_out(t.transpose(1, 2).reshape(b, c, hh, ww))


class Downsample(nn.Module):
    def __init__(self, ch):
        super().__init__()
        self.op = nn.Conv2d(ch, ch, 3, stride=2, padding=1)

    def forward(self, x):
        return self.op(x)


class Upsample(nn.Module):
    def __init__(self, ch):
        super().__init__()
        self.conv = nn.Conv2d(ch, ch, 3, padding=1)

    def forward(self, x):
        return self.conv(F.interpolate(x, scale_factor=2, mode="nearest"))


class UNet(nn.Module):
    """model.diffusion_model.*"""

    def __init__(self, mc=64, mult=(1, 2, 2), depth=(0, 1, 1), res=1, ctx_dim=64, mid_depth=1,
                 in_ch=4):
        super().__init__()
        self.mc, self.mult, self.depth, self.res = mc, mult, depth, res
        ted = 4 * mc
        self.time_embed = nn.Sequential(nn.Linear(mc, ted), nn.SiLU(), nn.Linear(ted, ted))
        blocks = [nn.ModuleList([nn.Conv2d(in_ch, mc, 3, padding=1)])]
        chans = [mc]
        ch = mc
        for lvl, m in enumerate(mult):
            for _ in range(res):
                layer = [ResBlock(ch, m * mc, ted)]
                ch = m * mc
                if depth[lvl]:
                    layer.append(SpatialTransformer(ch, ctx_dim, depth[lvl]))
                blocks.append(nn.ModuleList(layer))
                chans.append(ch)
            if lvl + 1 < len(mult):
                blocks.append(nn.ModuleList([Downsample(ch)]))
                chans.append(ch)
        self.input_blocks = nn.ModuleList(blocks)
        mid = [ResBlock(ch, ch, ted)]
        if mid_depth:
            mid.append(SpatialTransformer(ch, ctx_dim, mid_depth))
        mid.append(ResBlock(ch, ch, ted))
        self.middle_block = nn.ModuleList(mid)
        outs = []
        for lvl in reversed(range(len(mult))):
            for j in range(res + 1):
                skip = chans.pop()
                layer = [ResBlock(ch + skip, mult[lvl] * mc, ted)]
                ch = mult[lvl] * mc
                if depth[lvl]:
                    layer.append(SpatialTransformer(ch, ctx_dim, depth[lvl]))
                if lvl > 0 and j == res:
                    layer.append(Upsample(ch))
                outs.append(nn.ModuleList(layer))
        self.output_blocks = nn.ModuleList(outs)
        self.out = nn.Sequential(group_norm(mc), nn.SiLU(), nn.Conv2d(mc, in_ch, 3, padding=1))

    @staticmethod
    def _run(layers, h, emb, ctx):
        for m in layers:
            if isinstance(m, ResBlock):
                h = m(h, emb)
            elif isinstance(m, SpatialTransformer):
                h = m(h, ctx)
            else:
                h = m(h)
        return h

    def forward(self, x, t, ctx):
        emb = self.time_embed(timestep_features(t, self.mc))
        skips = []
        h = x
        for layers in self.input_blocks:
            h = self._run(layers, h, emb, ctx)
            skips.append(h)
        h = self._run(self.middle_block, h, emb, ctx)
        for layers in self.output_blocks:
            h = self._run(layers, torch.cat([h, skips.pop()], dim=1), emb, ctx)
        return self.out(h)


# ---------------------------------------------------------------------------------------
# KL autoencoder: ldm.modules.diffusionmodules.model layout under "first_stage_model."


class VaeResBlock(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.norm1, self.conv1 = group_norm(cin), nn.Conv2d(cin, cout, 3, padding=1)
        self.norm2, self.conv2 = group_norm(cout), nn.Conv2d(cout, cout, 3, padding=1)
        if cin != cout:
            self.nin_shortcut = nn.Conv2d(cin, cout, 1)

    def forward(self, x):
        h = self.conv1(F.silu(self.norm1(x)))
        h = self.conv2(F.silu(self.norm2(h)))
        return (self.nin_shortcut(x) if hasattr(self, "nin_shortcut") else x) + h


class VaeAttn(nn.Module):
    def __init__(self, ch):
        super().__init__()
        self.norm = group_norm(ch)
        self.q, self.k, self.v, self.proj_out = (nn.Conv2d(ch, ch, 1) for _ in range(4))

    def forward(self, x):
        b, c, hh, ww = x.shape
        h = self.norm(x)
        q = self.q(h).flatten(2).transpose(1, 2)
        k = self.k(h).flatten(2)
        v = self.v(h).flatten(2).transpose(1, 2)
        a = ((q @ k) / math.sqrt(c)).softmax(-1)
        return x + self.proj_out((a @ v).transpose(1, 2).reshape(b, c, hh, ww))


class VaeMid(nn.Module):
    def __init__(self, ch):
        super().__init__()
        self.block_1, self.attn_1, self.block_2 = VaeResBlock(ch, ch), VaeAttn(ch), VaeResBlock(ch, ch)

    def forward(self, x):
        return self.block_2(self.attn_1(self.block_1(x)))


class VaeDown(nn.Module):
    def __init__(self, cin, cout, res, down):
        super().__init__()
        self.block = nn.ModuleList(VaeResBlock(cin if j == 0 else cout, cout) for j in range(res))
        if down:
            self.downsample = nn.Module()
            self.downsample.conv = nn.Conv2d(cout, cout, 3, stride=2)


class VaeUp(nn.Module):
    def __init__(self, cin, cout, res, up):
        super().__init__()
        self.block = nn.ModuleList(VaeResBlock(cin if j == 0 else cout, cout) for j in range(res + 1))
        if up:
            self.upsample = nn.Module()
            self.upsample.conv = nn.Conv2d(cout, cout, 3, padding=1)


class Encoder(nn.Module):
    def __init__(self, ch, mult, res, z):
        super().__init__()
        self.conv_in = nn.Conv2d(3, ch, 3, padding=1)
        chans = [ch * m for m in mult]
        ins = [ch] + chans[:-1]
        self.down = nn.ModuleList(VaeDown(ins[i], chans[i], res, i + 1 < len(mult)) for i in range(len(mult)))
        self.mid = VaeMid(chans[-1])
        self.norm_out = group_norm(chans[-1])
        self.conv_out = nn.Conv2d(chans[-1], 2 * z, 3, padding=1)

    def forward(self, x):
        h = self.conv_in(x)
        for d in self.down:
            for b in d.block:
                h = b(h)
            if hasattr(d, "downsample"):
                h = d.downsample.conv(F.pad(h, (0, 1, 0, 1)))
        h = self.mid(h)
        return self.conv_out(F.silu(self.norm_out(h)))


class Decoder(nn.Module):
    def __init__(self, ch, mult, res, z):
        super().__init__()
        chans = [ch * m for m in mult]
        self.conv_in = nn.Conv2d(z, chans[-1], 3, padding=1)
        self.mid = VaeMid(chans[-1])
        ups = []
        for i in range(len(mult)):
            cin = chans[i + 1] if i + 1 < len(mult) else chans[-1]
            ups.append(VaeUp(cin, chans[i], res, i != 0))
        self.up = nn.ModuleList(ups)
        self.norm_out = group_norm(chans[0])
        self.conv_out = nn.Conv2d(chans[0], 3, 3, padding=1)

    def forward(self, z):
        h = self.mid(self.conv_in(z))
        for i in reversed(range(len(self.up))):
            u = self.up[i]
            for b in u.block:
                h = b(h)
            if hasattr(u, "upsample"):
                h = u.upsample.conv(F.interpolate(h, scale_factor=2, mode="nearest"))
        return self.conv_out(F.silu(self.norm_out(h)))


class AutoencoderKL(nn.Module):
    """first_stage_model.*"""

    def __init__(self, ch=32, mult=(1, 2, 2, 2), res=1, z=4):
        super().__init__()
        self.encoder = Encoder(ch, mult, res, z)
        self.decoder = Decoder(ch, mult, res, z)
        self.quant_conv = nn.Conv2d(2 * z, 2 * z, 1)
        self.post_quant_conv = nn.Conv2d(z, z, 1)

    def encode(self, x):
        """-> (mean, logvar) of the posterior."""
        m = self.quant_conv(self.encoder(x))
        return m.chunk(2, dim=1)

    def decode(self, z):
        return self.decoder(self.post_quant_conv(z))
