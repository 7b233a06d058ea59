#include "families/sd3/dit.h"

#include <algorithm>
#include <cmath>

#include "core/log.h"
#include "io/tensor_probe.h"
#include "nn/dit.h"
#include "nn/layers.h"

namespace ggdiff::models {
namespace {

constexpr float kNormEps = 1e-6f;
constexpr int kTimeFeatures = 256;
constexpr int kMaxPeriod = 10000;

std::string block(int i) {
    return "joint_blocks." + std::to_string(i) + ".";
}

struct Qkv {
    ggml_tensor *q, *k, *v;  // [hidden, T, N]
};

// The per-head q/k norm of attention `a` ("....attn." or "....attn2.") on [hidden, T, N].
ggml_tensor* norm_heads(nn::Ctx& c, const Sd3Config& cfg, ggml_tensor* x, const std::string& w) {
    const int64_t t = x->ne[1], n = x->ne[2], d = cfg.head_dim;
    ggml_tensor* h =
        ggml_view_4d(c.ctx, x, d, cfg.heads, t, n, d * ggml_element_size(x), x->nb[1], x->nb[2], 0);
    if (cfg.qk_norm == Sd3Config::QkNorm::Rms) {
        h = nn::rms_norm(c, h, w, d, kNormEps);
    } else {
        h = nn::layer_norm(c, ggml_cont(c.ctx, h), w, d, kNormEps);
    }
    return ggml_reshape_3d(c.ctx, h, cfg.hidden, t, n);
}

// q, k, v of one attention `a` ("<block>x_block.attn." ...) over its input x.
Qkv project_qkv(nn::Ctx& c, const Sd3Config& cfg, ggml_tensor* x, const std::string& a) {
    const int64_t hd = cfg.hidden;
    Qkv out;
    if (cfg.split_qkv) {
        out.q = nn::linear(c, x, a + "q", hd, hd);
        out.k = nn::linear(c, x, a + "k", hd, hd);
        out.v = nn::linear(c, x, a + "v", hd, hd);
    } else {
        ggml_tensor* qkv = nn::linear(c, x, a + "qkv", hd, 3 * hd);
        out.q = nn::feature_rows(c.ctx, qkv, 0, hd);
        out.k = nn::feature_rows(c.ctx, qkv, hd, hd);
        out.v = ggml_cont(c.ctx, nn::feature_rows(c.ctx, qkv, 2 * hd, hd));
    }
    if (cfg.qk_norm != Sd3Config::QkNorm::None) {
        const std::string norm = cfg.qk_norm == Sd3Config::QkNorm::Rms ? ".weight" : "";
        out.q = norm_heads(c, cfg, out.q, a + "ln_q" + norm);
        out.k = norm_heads(c, cfg, out.k, a + "ln_k" + norm);
    } else {
        out.q = ggml_cont(c.ctx, out.q);
        out.k = ggml_cont(c.ctx, out.k);
    }
    return out;
}

ggml_tensor* gated(ggml_context* ctx, ggml_tensor* x, ggml_tensor* y, ggml_tensor* gate) {
    return ggml_add(ctx, x, ggml_mul(ctx, y, gate));
}

ggml_tensor* mlp(nn::Ctx& c, const Sd3Config& cfg, ggml_tensor* x, const std::string& p) {
    ggml_tensor* h = nn::linear(c, x, p + "fc1", cfg.hidden, cfg.mlp_hidden);
    return nn::linear(c, ggml_gelu(c.ctx, h), p + "fc2", cfg.mlp_hidden, cfg.hidden);
}

// A two-chunk (shift, scale) modulation: "<p>adaLN_modulation.1", or the diffusers
// (scale, shift) order as "<p>adaLN_scale_shift".
std::vector<ggml_tensor*> shift_scale(nn::Ctx& c, const Sd3Config& cfg, ggml_tensor* vec,
                                      const std::string& p) {
    if (!cfg.scale_first) return nn::modulation(c, vec, p + "adaLN_modulation.1", cfg.hidden, 2);
    auto m = nn::modulation(c, vec, p + "adaLN_scale_shift", cfg.hidden, 2);
    return {m[1], m[0]};
}

ggml_tensor* attention(nn::Ctx& c, const Sd3Config& cfg, const Qkv& a) {
    return nn::attention(c.ctx, a.q, a.k, a.v, static_cast<int>(cfg.heads));
}

}  // namespace

int Sd3Config::mmdit_x_blocks() const {
    return static_cast<int>(std::count(self_attn.begin(), self_attn.end(), true));
}

Result<Sd3Config> detect_sd3(const TensorIndex& index, const std::string& prefix) {
    const TensorProbe p{index, prefix, "SD3"};
    Sd3Config cfg;
    cfg.prefix = prefix;
    auto xe = p.shape("x_embedder.proj.weight", 4);
    if (!xe.ok()) return xe.status();
    // torch [hidden, channels, patch, patch]
    cfg.hidden = (*xe)[0];
    cfg.in_channels = (*xe)[1];
    cfg.patch = static_cast<int>((*xe)[2]);
    if ((*xe)[2] != (*xe)[3] || cfg.patch < 1 || cfg.patch > 8) {
        return p.odd("x_embedder.proj.weight", "not a square patch embedding");
    }
    cfg.depth = 0;
    const bool split = p.has(block(0) + "x_block.attn.q.weight");
    cfg.split_qkv = split;
    const std::string qkv = split ? "x_block.attn.q.weight" : "x_block.attn.qkv.weight";
    while (p.has(block(cfg.depth) + qkv)) ++cfg.depth;
    if (cfg.depth == 0) return p.missing(block(0) + qkv);
    for (int i = 0; i < cfg.depth; ++i) {
        cfg.self_attn.push_back(
            p.has(block(i) + "x_block.attn2." + (split ? std::string("q.weight") : "qkv.weight")));
    }
    cfg.scale_first = p.has("final_layer.adaLN_scale_shift.weight");

    // q/k norm: RMSNorm (weight only) or LayerNorm (weight and bias) per head.
    const std::string lnq = block(0) + "x_block.attn.ln_q.";
    if (p.has(lnq + "weight")) {
        auto s = p.shape(lnq + "weight", 1);
        if (!s.ok()) return s.status();
        cfg.head_dim = (*s)[0];
        cfg.qk_norm = p.has(lnq + "bias") ? Sd3Config::QkNorm::Layer : Sd3Config::QkNorm::Rms;
        if (cfg.head_dim <= 0 || cfg.hidden % cfg.head_dim != 0) {
            return p.odd(lnq + "weight", "the head width does not divide the hidden width");
        }
        cfg.heads = cfg.hidden / cfg.head_dim;
    } else {
        // Without q/k norm the reference sets heads = depth (SD3 Medium: 24 heads of 64).
        cfg.qk_norm = Sd3Config::QkNorm::None;
        cfg.heads = cfg.depth;
        if (cfg.hidden % cfg.heads != 0) {
            return p.odd("x_embedder.proj.weight", "the hidden width is not a multiple of the " +
                                                       std::to_string(cfg.heads) + " heads");
        }
        cfg.head_dim = cfg.hidden / cfg.heads;
    }

    auto fc1 = p.shape(block(0) + "x_block.mlp.fc1.weight", 2);
    if (!fc1.ok()) return fc1.status();
    cfg.mlp_hidden = (*fc1)[0];

    auto ce = p.shape("context_embedder.weight", 2);
    if (!ce.ok()) return ce.status();
    if ((*ce)[0] != cfg.hidden) return p.odd("context_embedder.weight", "not the hidden width");
    cfg.context_dim = (*ce)[1];

    cfg.pooled_dim = 0;
    if (p.has("y_embedder.mlp.0.weight")) {
        auto ye = p.shape("y_embedder.mlp.0.weight", 2);
        if (!ye.ok()) return ye.status();
        cfg.pooled_dim = (*ye)[1];
    }

    auto pe = index.find(prefix + "pos_embed");
    if (!pe) return p.missing("pos_embed");
    int64_t positions = 1;
    for (size_t i = 0; i + 1 < pe->shape.size(); ++i) positions *= pe->shape[i];
    if (pe->shape.empty() || pe->shape.back() != cfg.hidden) {
        return p.odd("pos_embed", "the last dimension is not the hidden width");
    }
    cfg.pos_grid = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(positions))));
    if (cfg.pos_grid * cfg.pos_grid != positions) {
        return p.odd("pos_embed", "not a square grid of positions");
    }

    const std::string fin = cfg.scale_first ? "final_layer.adaLN_scale_shift.weight"
                                            : "final_layer.adaLN_modulation.1.weight";
    if (!p.has(fin)) return p.missing(fin);
    auto fl = p.shape("final_layer.linear.weight", 2);
    if (!fl.ok()) return fl.status();
    const int64_t area = static_cast<int64_t>(cfg.patch) * cfg.patch;
    if ((*fl)[0] % area != 0) {
        return p.odd("final_layer.linear.weight", "output is not a multiple of the patch");
    }
    cfg.out_channels = (*fl)[0] / area;
    return cfg;
}

Status check_sd3_size(const Sd3Config& cfg, int64_t latent_w, int64_t latent_h) {
    const int64_t w = (latent_w + cfg.patch - 1) / cfg.patch;
    const int64_t h = (latent_h + cfg.patch - 1) / cfg.patch;
    if (w > cfg.pos_grid || h > cfg.pos_grid) {
        const int64_t px = cfg.pos_grid * cfg.patch * 8;
        return Status::Error(string_format(
            "SD3: the image is too large for the model's position grid (%lld x %lld patches): "
            "at most %lld pixels a side",
            (long long)cfg.pos_grid, (long long)cfg.pos_grid, (long long)px));
    }
    return Status::Ok();
}

void build_sd3_block(nn::Ctx& c, const Sd3Config& cfg, int index, ggml_tensor*& x,
                     ggml_tensor*& context, ggml_tensor* vec) {
    const std::string p = cfg.prefix + block(index);
    const std::string cb = p + "context_block.", xb = p + "x_block.";
    const int64_t hd = cfg.hidden;
    const bool pre_only = index == cfg.depth - 1;
    const bool self_attn = cfg.self_attn[static_cast<size_t>(index)];

    std::vector<ggml_tensor*> cm =
        pre_only && cfg.scale_first
            ? shift_scale(c, cfg, vec, cb)
            : nn::modulation(c, vec, cb + "adaLN_modulation.1", hd, pre_only ? 2 : 6);
    auto xm = nn::modulation(c, vec, xb + "adaLN_modulation.1", hd, self_attn ? 9 : 6);

    ggml_tensor* c_in =
        nn::modulate(c.ctx, nn::layer_norm_plain(c.ctx, context, kNormEps), cm[0], cm[1]);
    ggml_tensor* x_norm = nn::layer_norm_plain(c.ctx, x, kNormEps);
    const Qkv cq = project_qkv(c, cfg, c_in, cb + "attn.");
    const Qkv xq = project_qkv(c, cfg, nn::modulate(c.ctx, x_norm, xm[0], xm[1]), xb + "attn.");
    // Context tokens first, then the image.
    const Qkv joint{ggml_concat(c.ctx, cq.q, xq.q, 1), ggml_concat(c.ctx, cq.k, xq.k, 1),
                    ggml_concat(c.ctx, cq.v, xq.v, 1)};
    ggml_tensor* attn = attention(c, cfg, joint);
    const int64_t lc = context->ne[1], lx = x->ne[1];

    if (pre_only) {
        context = nullptr;
    } else {
        ggml_tensor* ca = nn::token_range(c.ctx, attn, 0, lc);
        context = gated(c.ctx, context, nn::linear(c, ca, cb + "attn.proj", hd, hd), cm[2]);
        ggml_tensor* h =
            nn::modulate(c.ctx, nn::layer_norm_plain(c.ctx, context, kNormEps), cm[3], cm[4]);
        context = gated(c.ctx, context, mlp(c, cfg, h, cb + "mlp."), cm[5]);
    }

    ggml_tensor* xa = nn::token_range(c.ctx, attn, lc, lx);
    x = gated(c.ctx, x, nn::linear(c, xa, xb + "attn.proj", hd, hd), xm[2]);
    if (self_attn) {
        const Qkv q2 =
            project_qkv(c, cfg, nn::modulate(c.ctx, x_norm, xm[6], xm[7]), xb + "attn2.");
        x = gated(c.ctx, x, nn::linear(c, attention(c, cfg, q2), xb + "attn2.proj", hd, hd), xm[8]);
    }
    ggml_tensor* h = nn::modulate(c.ctx, nn::layer_norm_plain(c.ctx, x, kNormEps), xm[3], xm[4]);
    x = gated(c.ctx, x, mlp(c, cfg, h, xb + "mlp."), xm[5]);
}

ggml_tensor* build_sd3(nn::Ctx& c, const Sd3Config& cfg, ggml_tensor* x, ggml_tensor* timesteps,
                       ggml_tensor* context, ggml_tensor* y, const std::vector<int>& skip) {
    const std::string& p = cfg.prefix;
    const int64_t W = x->ne[0], H = x->ne[1], N = x->ne[3];
    const int ps = cfg.patch;
    x = nn::pad_to_patch(c.ctx, x, ps);
    const int64_t w = x->ne[0] / ps, h = x->ne[1] / ps;

    // Patches -> tokens [hidden, w*h, N], plus the centre crop of the position grid.
    ggml_tensor* img = nn::conv2d(c, x, p + "x_embedder.proj", cfg.in_channels, cfg.hidden, ps, ps);
    img = nn::image_to_tokens(c.ctx, img);
    const int64_t g = cfg.pos_grid;
    const int64_t top = (g - h) / 2, left = (g - w) / 2;
    ggml_tensor* grid =
        ggml_reshape_3d(c.ctx, c.W(p + "pos_embed", {cfg.hidden, g * g, 1}), cfg.hidden, g, g);
    ggml_tensor* pos = ggml_view_3d(c.ctx, grid, cfg.hidden, w, h, grid->nb[1], grid->nb[2],
                                    top * grid->nb[2] + left * grid->nb[1]);
    pos = ggml_reshape_2d(c.ctx, ggml_cast(c.ctx, pos, GGML_TYPE_F32), cfg.hidden, w * h);
    img = ggml_add(c.ctx, img, pos);

    ggml_tensor* f = ggml_timestep_embedding(c.ctx, timesteps, kTimeFeatures, kMaxPeriod);
    ggml_tensor* vec = nn::linear(c, f, p + "t_embedder.mlp.0", kTimeFeatures, cfg.hidden);
    vec = nn::linear(c, ggml_silu(c.ctx, vec), p + "t_embedder.mlp.2", cfg.hidden, cfg.hidden);
    if (cfg.pooled_dim > 0 && y) {
        ggml_tensor* v = nn::linear(c, y, p + "y_embedder.mlp.0", cfg.pooled_dim, cfg.hidden);
        v = nn::linear(c, ggml_silu(c.ctx, v), p + "y_embedder.mlp.2", cfg.hidden, cfg.hidden);
        vec = ggml_add(c.ctx, vec, v);
    }
    // One conditioning may serve the whole batch.
    if (context->ne[2] != N) {
        context = ggml_repeat(
            c.ctx, context,
            ggml_new_tensor_3d(c.ctx, context->type, context->ne[0], context->ne[1], N));
    }
    context = nn::linear(c, context, p + "context_embedder", cfg.context_dim, cfg.hidden);

    for (int i = 0; i < cfg.depth; ++i) {
        if (std::find(skip.begin(), skip.end(), i) != skip.end()) continue;
        build_sd3_block(c, cfg, i, img, context, vec);
    }

    auto m = shift_scale(c, cfg, vec, p + "final_layer.");
    img = nn::modulate(c.ctx, nn::layer_norm_plain(c.ctx, img, kNormEps), m[0], m[1]);
    img = nn::linear(c, img, p + "final_layer.linear", cfg.hidden, cfg.out_channels * ps * ps);
    // The final linear orders each patch's features (row, column, channel), channel fastest;
    // nn::unpatchify takes (channel, row, column).
    const int64_t pp = static_cast<int64_t>(ps) * ps;
    img = ggml_reshape_4d(c.ctx, img, cfg.out_channels, pp, img->ne[1], img->ne[2]);
    img = ggml_cont(c.ctx, ggml_permute(c.ctx, img, 1, 0, 2, 3));
    img = ggml_reshape_3d(c.ctx, img, cfg.out_channels * pp, img->ne[2], img->ne[3]);
    return nn::crop_latent(c.ctx, nn::unpatchify(c.ctx, img, w, h, ps), W, H);
}

}  // namespace ggdiff::models
