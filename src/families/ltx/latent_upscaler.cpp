#include "families/ltx/latent_upscaler.h"

#include <ggml.h>

#include <cmath>

#include "families/ltx/video_vae.h"
#include "nn/layers.h"

namespace ggdiff::ltx {

namespace {

constexpr int kGroups = 32;
constexpr float kNormEps = 1e-5f;

ggml_tensor* f32(ggml_context* ctx, ggml_tensor* t) {
    return t->type == GGML_TYPE_F32 ? t : ggml_cast(ctx, t, GGML_TYPE_F32);
}

// A 3x3x3 convolution with zero padding on every axis.
ggml_tensor* conv3d(nn::Ctx& c, ggml_tensor* x, const std::string& p, int64_t in, int64_t out) {
    return conv3d_valid(c, ggml_pad_ext(c.ctx, x, 0, 0, 0, 0, 0, 0, 1, 1), p, in, out);
}

// GroupNorm over the whole clip: statistics of each group of channels over all pixels of all
// frames of x [W, H, C, T].
ggml_tensor* group_norm(nn::Ctx& c, ggml_tensor* x, const std::string& p, int64_t ch) {
    const int64_t w = x->ne[0], h = x->ne[1], t = x->ne[3];
    ggml_tensor* y = ggml_cont(c.ctx, ggml_permute(c.ctx, x, 0, 1, 3, 2));  // W H T C
    y = ggml_group_norm(c.ctx, ggml_reshape_4d(c.ctx, y, w, h * t, ch, 1), kGroups, kNormEps);
    y = ggml_mul(c.ctx, y,
                 ggml_reshape_4d(c.ctx, f32(c.ctx, c.W(p + "weight", {ch})), 1, 1, ch, 1));
    y = ggml_add(c.ctx, y, ggml_reshape_4d(c.ctx, f32(c.ctx, c.W(p + "bias", {ch})), 1, 1, ch, 1));
    y = ggml_reshape_4d(c.ctx, y, w, h, t, ch);
    return ggml_cont(c.ctx, ggml_permute(c.ctx, y, 0, 1, 3, 2));  // W H C T
}

ggml_tensor* res_block(nn::Ctx& c, ggml_tensor* x, const std::string& p, int64_t ch) {
    ggml_tensor* h = group_norm(c, conv3d(c, x, p + "conv1.", ch, ch), p + "norm1.", ch);
    h = conv3d(c, ggml_silu(c.ctx, h), p + "conv2.", ch, ch);
    h = group_norm(c, h, p + "norm2.", ch);
    return ggml_silu(c.ctx, ggml_add(c.ctx, h, x));
}

// Every `s`-th column and row of x [W, H, C, T], starting with the first.
ggml_tensor* subsample(ggml_context* ctx, ggml_tensor* x, int s) {
    const int64_t w = x->ne[0], h = x->ne[1], ct = x->ne[2] * x->ne[3];
    const int64_t ow = (w + s - 1) / s, oh = (h + s - 1) / s;
    x = ggml_pad_ext(ctx, x, 0, static_cast<int>(ow * s - w), 0, static_cast<int>(oh * s - h), 0, 0,
                     0, 0);
    ggml_tensor* v = ggml_reshape_4d(ctx, x, s, ow, oh * s, ct);
    v = ggml_cont(ctx, ggml_view_4d(ctx, v, 1, ow, oh * s, ct, v->nb[1], v->nb[2], v->nb[3], 0));
    v = ggml_reshape_4d(ctx, v, ow, s, oh, ct);
    v = ggml_cont(ctx, ggml_view_4d(ctx, v, ow, 1, oh, ct, v->nb[1], v->nb[2], v->nb[3], 0));
    return ggml_reshape_4d(ctx, v, ow, oh, x->ne[2], x->ne[3]);
}

// The 5x5 binomial blur ([1 4 6 4 1] / 16 each way, zero padding 2), then stride `s`.
ggml_tensor* blur_down(ggml_context* ctx, ggml_tensor* x, int s) {
    static const float kTaps[5] = {1.f / 16, 4.f / 16, 6.f / 16, 4.f / 16, 1.f / 16};
    const int64_t w = x->ne[0], h = x->ne[1];
    ggml_tensor* p = ggml_pad_ext(ctx, x, 2, 2, 0, 0, 0, 0, 0, 0);
    ggml_tensor* y = nullptr;
    for (int i = 0; i < 5; ++i) {
        ggml_tensor* v = ggml_view_4d(ctx, p, w, h, p->ne[2], p->ne[3], p->nb[1], p->nb[2],
                                      p->nb[3], static_cast<size_t>(i) * p->nb[0]);
        v = ggml_scale(ctx, ggml_cont(ctx, v), kTaps[i]);
        y = y ? ggml_add(ctx, y, v) : v;
    }
    p = ggml_pad_ext(ctx, y, 0, 0, 2, 2, 0, 0, 0, 0);
    y = nullptr;
    for (int i = 0; i < 5; ++i) {
        ggml_tensor* v = ggml_view_4d(ctx, p, w, h, p->ne[2], p->ne[3], p->nb[1], p->nb[2],
                                      p->nb[3], static_cast<size_t>(i) * p->nb[1]);
        v = ggml_scale(ctx, ggml_cont(ctx, v), kTaps[i]);
        y = y ? ggml_add(ctx, y, v) : v;
    }
    return subsample(ctx, y, s);
}

}  // namespace

int64_t LtxUpscalerConfig::out_width(int64_t w) const {
    return kind == Kind::Temporal ? w : (w * num - 1) / den + 1;
}

int64_t LtxUpscalerConfig::out_height(int64_t h) const {
    return kind == Kind::Temporal ? h : (h * num - 1) / den + 1;
}

int64_t LtxUpscalerConfig::out_frames(int64_t frames) const {
    return kind == Kind::Temporal ? 2 * frames - 1 : frames;
}

bool is_ltx_latent_upscaler(const TensorIndex& index, const std::string& prefix) {
    return index.has(prefix + "initial_conv.weight") && index.has(prefix + "final_conv.weight") &&
           index.has(prefix + "initial_norm.weight");
}

Result<LtxUpscalerConfig> detect_ltx_latent_upscaler(const TensorIndex& index,
                                                     const std::string& prefix) {
    LtxUpscalerConfig cfg;
    cfg.prefix = prefix;
    const TensorInfo* in = index.find(prefix + "initial_conv.weight");
    if (!in || in->shape.size() != 5) {
        return Status::Error("missing tensor " + prefix + "initial_conv.weight (3x3x3 kernel)");
    }
    cfg.mid = in->shape[0];
    cfg.channels = in->shape[1];
    if (cfg.mid % kGroups != 0) {
        return Status::Error(prefix + "initial_conv.weight: " + std::to_string(cfg.mid) +
                             " channels do not split into 32 norm groups");
    }
    const TensorInfo* out = index.find(prefix + "final_conv.weight");
    if (!out || out->shape.size() != 5 || out->shape[0] != cfg.channels ||
        out->shape[1] != cfg.mid) {
        return Status::Error("missing tensor " + prefix + "final_conv.weight (" +
                             std::to_string(cfg.mid) + " -> " + std::to_string(cfg.channels) +
                             " channels)");
    }
    cfg.blocks = 0;
    while (index.has(prefix + "res_blocks." + std::to_string(cfg.blocks) + ".conv1.weight")) {
        if (!index.has(prefix + "post_upsample_res_blocks." + std::to_string(cfg.blocks) +
                       ".conv1.weight")) {
            return Status::Error("missing tensor " + prefix + "post_upsample_res_blocks." +
                                 std::to_string(cfg.blocks) + ".conv1.weight");
        }
        ++cfg.blocks;
    }
    if (const TensorInfo* r = index.find(prefix + "upsampler.conv.weight")) {
        cfg.kind = LtxUpscalerConfig::Kind::Rational;
        const int64_t ratio = r->shape[0] / cfg.mid;
        const int num = static_cast<int>(std::lround(std::sqrt(static_cast<double>(ratio))));
        if (r->shape[0] % cfg.mid != 0 || num < 1 || int64_t{num} * num != ratio) {
            return Status::Error(prefix + "upsampler.conv.weight: " + std::to_string(r->shape[0]) +
                                 " channels are not a square times " + std::to_string(cfg.mid));
        }
        cfg.num = num;
        cfg.den = num == 3 ? 2 : 1;  // x1.5 (as the reference: only 3 is rational)
    } else if (const TensorInfo* u = index.find(prefix + "upsampler.0.bias")) {
        if (u->shape[0] == 4 * cfg.mid) {
            cfg.kind = LtxUpscalerConfig::Kind::Spatial;
        } else if (u->shape[0] == 2 * cfg.mid) {
            cfg.kind = LtxUpscalerConfig::Kind::Temporal;
            cfg.num = 1;
        } else {
            return Status::Error(prefix + "upsampler.0.bias: " + std::to_string(u->shape[0]) +
                                 " channels, expected 2 or 4 times " + std::to_string(cfg.mid));
        }
    } else {
        return Status::Error("missing tensor " + prefix + "upsampler.0.weight or " + prefix +
                             "upsampler.conv.weight");
    }
    return cfg;
}

ggml_tensor* build_ltx_latent_upscale(nn::Ctx& c, const LtxUpscalerConfig& cfg, ggml_tensor* x) {
    const std::string& p = cfg.prefix;
    const int64_t mid = cfg.mid;
    x = conv3d(c, x, p + "initial_conv.", cfg.channels, mid);
    x = ggml_silu(c.ctx, group_norm(c, x, p + "initial_norm.", mid));
    for (int i = 0; i < cfg.blocks; ++i) {
        x = res_block(c, x, p + "res_blocks." + std::to_string(i) + ".", mid);
    }
    switch (cfg.kind) {
        case LtxUpscalerConfig::Kind::Spatial:
            x = nn::conv2d(c, x, p + "upsampler.0", mid, 4 * mid, 3, 1, 1);
            x = depth_to_space(c.ctx, x, mid, 1, 2, false);
            break;
        case LtxUpscalerConfig::Kind::Rational:
            x = nn::conv2d(c, x, p + "upsampler.conv", mid, int64_t{cfg.num} * cfg.num * mid, 3, 1,
                           1);
            x = depth_to_space(c.ctx, x, mid, 1, cfg.num, false);
            if (cfg.den > 1) x = blur_down(c.ctx, x, cfg.den);
            break;
        case LtxUpscalerConfig::Kind::Temporal:
            x = conv3d(c, x, p + "upsampler.0.", mid, 2 * mid);
            x = depth_to_space(c.ctx, x, mid, 2, 1, true);
            break;
    }
    for (int i = 0; i < cfg.blocks; ++i) {
        x = res_block(c, x, p + "post_upsample_res_blocks." + std::to_string(i) + ".", mid);
    }
    return conv3d(c, x, p + "final_conv.", mid, cfg.channels);
}

Result<HostTensor> ltx_upscale_latent(const LtxUpscalerConfig& cfg, const HostTensor& x,
                                      const models::WanGraphRun& run) {
    if (x.dim(2) != cfg.channels || x.dim(3) < 1) {
        return Status::Error("LTX latent upscaler: expected " + std::to_string(cfg.channels) +
                             " channels per frame, got " + std::to_string(x.dim(2)));
    }
    auto r = run([&](nn::Ctx& c, const std::function<ggml_tensor*(const HostTensor&)>& input) {
        return std::vector<ggml_tensor*>{build_ltx_latent_upscale(c, cfg, input(x))};
    });
    if (!r.ok()) return r.status().with_context("LTX latent upscaler");
    if (r->size() != 1) return Status::Error("LTX latent upscaler: the graph returned nothing");
    return std::move((*r)[0]);
}

}  // namespace ggdiff::ltx
