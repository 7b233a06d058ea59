#include "models/vae/wan_vae.h"

#include <ggml.h>

#include "nn/layers.h"
#include "runtime/cpu_kernels.h"
#include "runtime/kernel_choices.h"

namespace ggdiff::models {

namespace {

// Wan 2.1's latent statistics (16 channels).
const std::vector<float> kWan21Mean = {-0.7571f, -0.7089f, -0.9113f, 0.1075f,  -0.1745f, 0.9653f,
                                       -0.1517f, 1.5508f,  0.4134f,  -0.0715f, 0.5517f,  -0.3632f,
                                       -0.1922f, -0.9497f, 0.2503f,  -0.2921f};
const std::vector<float> kWan21Std = {2.8184f, 1.4541f, 2.3275f, 2.6558f, 1.2196f, 1.7708f,
                                      2.6052f, 2.0743f, 3.2687f, 2.1526f, 2.8652f, 1.5579f,
                                      1.6382f, 1.1253f, 2.8251f, 1.9160f};

// A convolution weight: [OC, IC, (KT,) K, K]. Records its temporal taps.
Status conv_shape(const TensorIndex& index, WanVaeConfig& cfg, const std::string& name, int64_t* in,
                  int64_t* out) {
    const TensorInfo* t = index.find(name);
    if (!t || (t->shape.size() != 4 && t->shape.size() != 5)) {
        return Status::Error("missing tensor " + name + " (a 2-D or 3-D convolution kernel)");
    }
    *out = t->shape[0];
    *in = t->shape[1];
    cfg.taps[name] = t->shape.size() == 5 ? t->shape[2] : 0;
    return Status::Ok();
}

Status read_blocks(const TensorIndex& index, WanVaeConfig& cfg, const std::string& list,
                   bool decoder, std::vector<WanBlock>& out) {
    for (int i = 0;; ++i) {
        const std::string p = list + std::to_string(i) + ".";
        if (!index.has_prefix(p)) break;
        WanBlock b;
        b.prefix = p;
        if (index.has(p + "residual.2.weight")) {
            b.kind = WanBlock::Kind::Residual;
            GGDIFF_TRY(conv_shape(index, cfg, p + "residual.2.weight", &b.in, &b.out));
            int64_t in2 = 0, out2 = 0;
            GGDIFF_TRY(conv_shape(index, cfg, p + "residual.6.weight", &in2, &out2));
            b.shortcut = index.has(p + "shortcut.weight");
            if (b.shortcut) GGDIFF_TRY(conv_shape(index, cfg, p + "shortcut.weight", &in2, &out2));
            if (!b.shortcut && b.in != b.out) {
                return Status::Error("missing tensor " + p + "shortcut.weight");
            }
        } else if (index.has(p + "resample.1.weight")) {
            b.kind = decoder ? WanBlock::Kind::Upsample : WanBlock::Kind::Downsample;
            const TensorInfo* t = index.find(p + "resample.1.weight");
            if (t->shape.size() != 4) return Status::Error(p + "resample.1.weight is not 2-D conv");
            b.out = t->shape[0];
            b.in = t->shape[1];
        } else {
            return Status::Error("missing tensor " + p + "residual.2.weight");
        }
        out.push_back(b);
    }
    if (out.empty()) return Status::Error("missing tensor " + list + "0.residual.2.weight");
    return Status::Ok();
}

// ---------------------------------------------------------------- graph pieces

// With seamless tiling (KernelChoices::circular_x/y) x is padded by wrap-around first.
ggml_tensor* conv_w(ggml_context* ctx, ggml_tensor* x, ggml_tensor* w, ggml_tensor* b, int stride,
                    int pad) {
    if (pad > 0) {
        const KernelChoices k = kernel_choices(ctx);
        if (k.circular_x || k.circular_y) {
            x = nn::pad_wrap(ctx, x, pad, pad, pad, pad, k.circular_x, k.circular_y);
            pad = 0;
        }
    }
    if (cpu::enabled(ctx) && cpu::can_conv2d(w, x, b)) {
        return cpu::conv2d(ctx, w, x, b, stride, pad);
    }
    ggml_tensor* y = ggml_conv_2d(ctx, w, x, stride, stride, pad, pad, 1, 1);
    if (b) y = ggml_add(ctx, y, ggml_reshape_4d(ctx, b, 1, 1, b->ne[0], 1));
    return y;
}

// A (causal 3-D or 2-D) convolution on one frame: the last temporal tap of a 3-D kernel (the
// causal padding before the frame is zeros). With seamless tiling on both axes
// stable-diffusion.cpp wraps that temporal padding around as well, so every tap sees the one
// frame: the kernel is then the sum of its taps (as there; with one axis it stays zeros).
ggml_tensor* conv(nn::Ctx& c, const WanVaeConfig& cfg, ggml_tensor* x, const std::string& p,
                  int64_t in, int64_t out, int k, int stride = 1, int pad = -1) {
    if (pad < 0) pad = k / 2;
    const std::string name = p + "weight";
    auto it = cfg.taps.find(name);
    const int64_t taps = it == cfg.taps.end() ? 0 : it->second;
    ggml_tensor* w = nullptr;
    if (taps == 0) {
        w = c.W(name, {k, k, in, out});
    } else {
        w = c.W(name, {k, k, taps, in * out});
        const KernelChoices kc = kernel_choices(c.ctx);
        if (taps > 1 && kc.circular_x && kc.circular_y) {
            ggml_tensor* wf = w->type == GGML_TYPE_F32 ? w : ggml_cast(c.ctx, w, GGML_TYPE_F32);
            ggml_tensor* sum = nullptr;
            for (int64_t t = 0; t < taps; ++t) {
                ggml_tensor* tap = ggml_view_4d(c.ctx, wf, k, k, 1, in * out, wf->nb[1], wf->nb[2],
                                                wf->nb[3], static_cast<size_t>(t) * wf->nb[2]);
                sum = sum ? ggml_add(c.ctx, sum, tap) : ggml_cont(c.ctx, tap);
            }
            w = sum;
        } else if (taps > 1) {
            w = ggml_view_4d(c.ctx, w, k, k, 1, in * out, w->nb[1], w->nb[2], w->nb[3],
                             static_cast<size_t>(taps - 1) * w->nb[2]);
            w = ggml_cont(c.ctx, w);
        }
        w = ggml_reshape_4d(c.ctx, w, k, k, in, out);
    }
    return conv_w(c.ctx, x, w, c.W(p + "bias", {out}), stride, pad);
}

// RMS norm over the channels of [W, H, C, 1], times gamma.
ggml_tensor* channel_rms(nn::Ctx& c, ggml_tensor* x, const std::string& name, int64_t ch) {
    const int64_t w = x->ne[0], h = x->ne[1];
    ggml_tensor* t = nn::image_to_tokens(c.ctx, x);
    t = ggml_mul(c.ctx, ggml_rms_norm(c.ctx, t, 1e-12f), c.W(name, {ch}));
    return nn::tokens_to_image(c.ctx, t, w, h);
}

ggml_tensor* residual(nn::Ctx& c, const WanVaeConfig& cfg, ggml_tensor* x, const WanBlock& b) {
    const std::string& p = b.prefix;
    ggml_tensor* h = b.shortcut ? conv(c, cfg, x, p + "shortcut.", b.in, b.out, 1) : x;
    ggml_tensor* y = ggml_silu(c.ctx, channel_rms(c, x, p + "residual.0.gamma", b.in));
    y = conv(c, cfg, y, p + "residual.2.", b.in, b.out, 3);
    y = ggml_silu(c.ctx, channel_rms(c, y, p + "residual.3.gamma", b.out));
    y = conv(c, cfg, y, p + "residual.6.", b.out, b.out, 3);
    return ggml_add(c.ctx, y, h);
}

ggml_tensor* attention_block(nn::Ctx& c, ggml_tensor* x, const std::string& p, int64_t ch) {
    const int64_t w = x->ne[0], h = x->ne[1];
    ggml_tensor* t = nn::image_to_tokens(c.ctx, channel_rms(c, x, p + "norm.gamma", ch));
    ggml_tensor* qkv = nn::linear(c, t, p + "to_qkv", ch, 3 * ch);  // [3C, WH, 1]
    const size_t es = ggml_element_size(qkv);
    auto part = [&](int i) {
        return ggml_cont(c.ctx, ggml_view_3d(c.ctx, qkv, ch, qkv->ne[1], qkv->ne[2], qkv->nb[1],
                                             qkv->nb[2], static_cast<size_t>(i) * ch * es));
    };
    ggml_tensor* o = nn::attention(c.ctx, part(0), part(1), part(2), 1);
    o = nn::linear(c, o, p + "proj", ch, ch);
    return ggml_add(c.ctx, x, nn::tokens_to_image(c.ctx, o, w, h));
}

ggml_tensor* middle(nn::Ctx& c, const WanVaeConfig& cfg, ggml_tensor* x, const std::string& p,
                    int64_t ch) {
    WanBlock b;
    b.in = b.out = ch;
    b.prefix = p + "middle.0.";
    x = residual(c, cfg, x, b);
    x = attention_block(c, x, p + "middle.1.", ch);
    b.prefix = p + "middle.2.";
    return residual(c, cfg, x, b);
}

}  // namespace

int WanVaeConfig::downscale() const {
    int d = 1;
    for (const WanBlock& b : decoder) {
        if (b.kind == WanBlock::Kind::Upsample) d *= 2;
    }
    return d;
}

bool is_wan_vae(const TensorIndex& index, const std::string& prefix) {
    return index.has(prefix + "decoder.middle.0.residual.0.gamma");
}

Result<WanVaeConfig> detect_wan_vae(const TensorIndex& index, const std::string& prefix) {
    WanVaeConfig cfg;
    cfg.prefix = prefix;
    const std::string d = prefix + "decoder.";
    int64_t in = 0, out = 0;
    GGDIFF_TRY(conv_shape(index, cfg, prefix + "conv2.weight", &in, &out));
    cfg.z_dim = out;
    GGDIFF_TRY(conv_shape(index, cfg, d + "conv1.weight", &in, &cfg.dec_width));
    if (in != cfg.z_dim) {
        return Status::Error(d + "conv1.weight takes " + std::to_string(in) +
                             " channels, the latent has " + std::to_string(cfg.z_dim));
    }
    for (int i : {0, 2}) {
        GGDIFF_TRY(conv_shape(index, cfg, d + "middle." + std::to_string(i) + ".residual.2.weight",
                              &in, &out));
        GGDIFF_TRY(conv_shape(index, cfg, d + "middle." + std::to_string(i) + ".residual.6.weight",
                              &in, &out));
    }
    GGDIFF_TRY(read_blocks(index, cfg, d + "upsamples.", true, cfg.decoder));
    int64_t head_in = 0;
    GGDIFF_TRY(conv_shape(index, cfg, d + "head.2.weight", &head_in, &cfg.image_channels));
    if (cfg.image_channels != 3 && cfg.image_channels != 4) {
        return Status::Error(d + "head.2.weight makes " + std::to_string(cfg.image_channels) +
                             " image channels; a Wan VAE makes 3 (RGB) or 4 (RGBA)");
    }
    const std::string e = prefix + "encoder.";
    cfg.has_encoder = index.has(e + "conv1.weight") && index.has(prefix + "conv1.weight");
    if (cfg.has_encoder) {
        int64_t first = 0;
        GGDIFF_TRY(conv_shape(index, cfg, e + "conv1.weight", &cfg.encoder_channels, &first));
        GGDIFF_TRY(read_blocks(index, cfg, e + "downsamples.", false, cfg.encoder));
        cfg.enc_width = cfg.encoder.back().out;
        for (int i : {0, 2}) {
            GGDIFF_TRY(conv_shape(
                index, cfg, e + "middle." + std::to_string(i) + ".residual.2.weight", &in, &out));
            GGDIFF_TRY(conv_shape(
                index, cfg, e + "middle." + std::to_string(i) + ".residual.6.weight", &in, &out));
        }
        GGDIFF_TRY(conv_shape(index, cfg, e + "head.2.weight", &in, &out));
        if (out != 2 * cfg.z_dim) {
            return Status::Error(e + "head.2.weight makes " + std::to_string(out) +
                                 " channels, expected " + std::to_string(2 * cfg.z_dim));
        }
        GGDIFF_TRY(conv_shape(index, cfg, prefix + "conv1.weight", &in, &out));
    }
    if (cfg.z_dim == 16) {
        cfg.mean = kWan21Mean;
        cfg.std = kWan21Std;
    } else {
        return Status::Error(prefix + "conv2.weight: a Wan VAE with " + std::to_string(cfg.z_dim) +
                             " latent channels is not supported yet (Wan 2.1 has 16)");
    }
    return cfg;
}

ggml_tensor* build_wan_decode(nn::Ctx& c, const WanVaeConfig& cfg, ggml_tensor* z) {
    const std::string d = cfg.prefix + "decoder.";
    ggml_tensor* x = conv(c, cfg, z, cfg.prefix + "conv2.", cfg.z_dim, cfg.z_dim, 1);
    x = conv(c, cfg, x, d + "conv1.", cfg.z_dim, cfg.dec_width, 3);
    x = middle(c, cfg, x, d, cfg.dec_width);
    int64_t ch = cfg.dec_width;
    for (const WanBlock& b : cfg.decoder) {
        if (b.kind == WanBlock::Kind::Residual) {
            x = residual(c, cfg, x, b);
        } else {
            x = nn::upsample_nearest2x(c.ctx, x);
            x = conv(c, cfg, x, b.prefix + "resample.1.", b.in, b.out, 3);
        }
        ch = b.out;
    }
    x = ggml_silu(c.ctx, channel_rms(c, x, d + "head.0.gamma", ch));
    return conv(c, cfg, x, d + "head.2.", ch, cfg.image_channels, 3);
}

ggml_tensor* build_wan_encode(nn::Ctx& c, const WanVaeConfig& cfg, ggml_tensor* x) {
    const std::string e = cfg.prefix + "encoder.";
    const int64_t first = cfg.encoder.front().in;
    x = conv(c, cfg, x, e + "conv1.", cfg.encoder_channels, first, 3);
    for (const WanBlock& b : cfg.encoder) {
        if (b.kind == WanBlock::Kind::Residual) {
            x = residual(c, cfg, x, b);
        } else {
            x = nn::pad_conv_input(c.ctx, x, 0, 1, 0, 1);  // right and bottom
            x = conv(c, cfg, x, b.prefix + "resample.1.", b.in, b.out, 3, 2, 0);
        }
    }
    x = middle(c, cfg, x, e, cfg.enc_width);
    x = ggml_silu(c.ctx, channel_rms(c, x, e + "head.0.gamma", cfg.enc_width));
    x = conv(c, cfg, x, e + "head.2.", cfg.enc_width, 2 * cfg.z_dim, 3);
    x = conv(c, cfg, x, cfg.prefix + "conv1.", 2 * cfg.z_dim, 2 * cfg.z_dim, 1);
    // The posterior mean: the first z_dim channels.
    return ggml_cont(c.ctx, ggml_view_4d(c.ctx, x, x->ne[0], x->ne[1], cfg.z_dim, 1, x->nb[1],
                                         x->nb[2], x->nb[3], 0));
}

}  // namespace ggdiff::models
