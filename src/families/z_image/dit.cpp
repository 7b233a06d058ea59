#include "families/z_image/dit.h"

#include <ggml.h>

#include <cmath>

#include "nn/dit.h"
#include "nn/layers.h"
#include "runtime/kernel_choices.h"

namespace ggdiff::models {

namespace {

size_t es(const ggml_tensor* t) {
    return ggml_element_size(t);
}

ggml_tensor* rms(nn::Ctx& c, ggml_tensor* x, const std::string& name, int64_t dim, float eps) {
    return ggml_mul(c.ctx, ggml_rms_norm(c.ctx, x, eps), c.W(name, {dim}));
}

// x * (1 + scale), scale [dim, 1, N].
ggml_tensor* scale_by(ggml_context* ctx, ggml_tensor* x, ggml_tensor* scale) {
    return ggml_add(ctx, x, ggml_mul(ctx, x, scale));
}

// Angles of tokens [first, first + count) of cos/sin [1, pairs, 1, T].
ggml_tensor* angle_range(ggml_context* ctx, ggml_tensor* a, int64_t first, int64_t count) {
    return ggml_view_4d(ctx, a, 1, a->ne[1], 1, count, a->nb[1], a->nb[2], a->nb[3],
                        static_cast<size_t>(first) * a->nb[3]);
}

// Interleaved-pair rotation of every head of x [heads*d, T, N] (contiguous) by per-token
// angles cos/sin [1, d/2, 1, T].
ggml_tensor* rope(ggml_context* ctx, ggml_tensor* x, ggml_tensor* cos, ggml_tensor* sin,
                  int64_t heads) {
    const int64_t dim = x->ne[0], t = x->ne[1], n = x->ne[2], d = dim / heads;
    const size_t e = es(x);
    ggml_tensor* x0 = ggml_view_4d(ctx, x, 1, d / 2, heads, t * n, 2 * e, d * e, dim * e, 0);
    ggml_tensor* x1 = ggml_view_4d(ctx, x, 1, d / 2, heads, t * n, 2 * e, d * e, dim * e, e);
    ggml_tensor* r0 = ggml_sub(ctx, ggml_mul(ctx, x0, cos), ggml_mul(ctx, x1, sin));
    ggml_tensor* r1 = ggml_add(ctx, ggml_mul(ctx, x0, sin), ggml_mul(ctx, x1, cos));
    return ggml_reshape_3d(ctx, ggml_concat(ctx, r0, r1, 0), dim, t, n);
}

// Per-head RMSNorm of x [heads*d, T, N].
ggml_tensor* head_rms(nn::Ctx& c, ggml_tensor* x, const std::string& name, int64_t d, float eps) {
    const int64_t dim = x->ne[0], t = x->ne[1], n = x->ne[2];
    x = ggml_reshape_4d(c.ctx, x, d, dim / d, t, n);
    return ggml_reshape_3d(c.ctx, rms(c, x, name, d, eps), dim, t, n);
}

ggml_tensor* attention(nn::Ctx& c, const ZImageConfig& cfg, const std::string& p, ggml_tensor* x,
                       ggml_tensor* cos, ggml_tensor* sin) {
    ggml_context* ctx = c.ctx;
    const int64_t d = cfg.head_dim, qw = cfg.heads * d, kw = cfg.kv_heads * d;
    ggml_tensor* qkv = nn::linear(c, x, p + "qkv", cfg.width, qw + 2 * kw, false);
    ggml_tensor* q = head_rms(c, ggml_cont(ctx, nn::feature_rows(ctx, qkv, 0, qw)),
                              p + "q_norm.weight", d, cfg.eps);
    ggml_tensor* k = head_rms(c, ggml_cont(ctx, nn::feature_rows(ctx, qkv, qw, kw)),
                              p + "k_norm.weight", d, cfg.eps);
    ggml_tensor* v = ggml_cont(ctx, nn::feature_rows(ctx, qkv, qw + kw, kw));
    q = rope(ctx, q, cos, sin, cfg.heads);
    k = nn::expand_kv_heads(ctx, rope(ctx, k, cos, sin, cfg.kv_heads), d, cfg.kv_heads, cfg.heads);
    v = nn::expand_kv_heads(ctx, v, d, cfg.kv_heads, cfg.heads);
    ggml_tensor* o = nn::attention(ctx, q, k, v, static_cast<int>(cfg.heads));
    return nn::linear(c, o, p + "out", qw, cfg.width, false);
}

ggml_tensor* feed_forward(nn::Ctx& c, const ZImageConfig& cfg, const std::string& p,
                          ggml_tensor* x) {
    ggml_tensor* g = ggml_silu(c.ctx, nn::linear(c, x, p + "w1", cfg.width, cfg.ffn, false));
    ggml_tensor* u = nn::linear(c, x, p + "w3", cfg.width, cfg.ffn, false);
    return nn::linear(c, ggml_mul(c.ctx, g, u), p + "w2", cfg.ffn, cfg.width, false);
}

// One joint block; temb [adaln_width, N] modulates it, or null (context refiner).
ggml_tensor* block(nn::Ctx& c, const ZImageConfig& cfg, const std::string& p, ggml_tensor* x,
                   ggml_tensor* temb, ggml_tensor* cos, ggml_tensor* sin) {
    ggml_context* ctx = c.ctx;
    const int64_t w = cfg.width;
    ggml_tensor* mod[4] = {nullptr, nullptr, nullptr, nullptr};  // scale, gate (attn, ffn)
    if (temb) {
        ggml_tensor* m = nn::linear(c, temb, p + "adaLN_modulation.0", cfg.adaln_width, 4 * w);
        const int64_t n = m->ne[1];
        for (int i = 0; i < 4; ++i) {
            mod[i] = ggml_cont(ctx, ggml_view_3d(ctx, m, w, 1, n, m->nb[1], m->nb[1],
                                                 static_cast<size_t>(i) * w * es(m)));
        }
        mod[1] = ggml_tanh(ctx, mod[1]);
        mod[3] = ggml_tanh(ctx, mod[3]);
    }
    ggml_tensor* a = rms(c, x, p + "attention_norm1.weight", w, cfg.eps);
    if (temb) a = scale_by(ctx, a, mod[0]);
    a = attention(c, cfg, p + "attention.", a, cos, sin);
    a = rms(c, a, p + "attention_norm2.weight", w, cfg.eps);
    if (temb) a = ggml_mul(ctx, a, mod[1]);
    x = ggml_add(ctx, x, a);

    ggml_tensor* f = rms(c, x, p + "ffn_norm1.weight", w, cfg.eps);
    if (temb) f = scale_by(ctx, f, mod[2]);
    f = feed_forward(c, cfg, p + "feed_forward.", f);
    f = rms(c, f, p + "ffn_norm2.weight", w, cfg.eps);
    if (temb) f = ggml_mul(ctx, f, mod[3]);
    return ggml_add(ctx, x, f);
}

// x [dim, T, N] followed by pad tokens (the learned [dim] vector `name`) up to `padded`.
ggml_tensor* pad_tokens(nn::Ctx& c, ggml_tensor* x, const std::string& name, int64_t padded) {
    const int64_t dim = x->ne[0], t = x->ne[1], n = x->ne[2];
    if (padded <= t) return x;
    ggml_tensor* pad = c.W(name, {dim, 1});
    if (pad->type != GGML_TYPE_F32) pad = ggml_cast(c.ctx, pad, GGML_TYPE_F32);
    pad = ggml_repeat(c.ctx, pad, ggml_new_tensor_3d(c.ctx, GGML_TYPE_F32, dim, padded - t, n));
    return ggml_concat(c.ctx, x, pad, 1);
}

// Latent [2w, 2h, C, N] -> tokens [4C, w*h, N], row-major patches; features ordered
// (row in patch, column in patch, channel) with the channel fastest.
ggml_tensor* patchify(ggml_context* ctx, ggml_tensor* x) {
    const int64_t W = x->ne[0], H = x->ne[1], C = x->ne[2], N = x->ne[3];
    const int64_t w = W / 2, h = H / 2;
    x = ggml_reshape_4d(ctx, x, 2, w, 2, h * C * N);       // [px, w, py, h*C*N]
    x = ggml_cont(ctx, ggml_permute(ctx, x, 0, 2, 1, 3));  // [px, py, w, h*C*N]
    x = ggml_reshape_4d(ctx, x, 4, w * h, C, N);
    x = ggml_cont(ctx, ggml_permute(ctx, x, 1, 2, 0, 3));  // [C, 4, w*h, N]
    return ggml_reshape_3d(ctx, x, 4 * C, w * h, N);
}

ggml_tensor* unpatchify(ggml_context* ctx, ggml_tensor* x, int64_t w, int64_t h) {
    const int64_t C = x->ne[0] / 4, N = x->ne[2];
    x = ggml_reshape_4d(ctx, x, C, 4, w * h, N);
    x = ggml_cont(ctx, ggml_permute(ctx, x, 2, 0, 1, 3));  // [4, w*h, C, N]
    x = ggml_reshape_4d(ctx, x, 2, 2, w, h * C * N);       // [px, py, w, rest]
    x = ggml_cont(ctx, ggml_permute(ctx, x, 0, 2, 1, 3));  // [px, w, py, rest]
    return ggml_reshape_4d(ctx, x, 2 * w, 2 * h, C, N);
}

int64_t round_up(int64_t v, int64_t m) {
    return (v + m - 1) / m * m;
}

const TensorInfo* find2d(const TensorIndex& index, const std::string& name) {
    const TensorInfo* t = index.find(name);
    return t && t->shape.size() == 2 ? t : nullptr;
}

int64_t count_blocks(const TensorIndex& index, const std::string& base, const char* probe) {
    int64_t n = 0;
    while (index.has(base + std::to_string(n) + probe)) ++n;
    return n;
}

}  // namespace

bool is_z_image(const TensorIndex& index, const std::string& prefix) {
    return index.has(prefix + "cap_embedder.0.weight") && index.has(prefix + "x_embedder.weight");
}

Result<ZImageConfig> detect_z_image(const TensorIndex& index, const std::string& prefix) {
    ZImageConfig cfg;
    cfg.prefix = prefix;
    auto need2 = [&](const std::string& name, const TensorInfo** out) -> Status {
        *out = find2d(index, prefix + name);
        if (!*out) return Status::Error("missing tensor " + prefix + name);
        return Status::Ok();
    };
    const TensorInfo *x_emb, *cap1, *t0, *t2, *qkv, *out, *w1, *final_lin;
    GGDIFF_TRY(need2("x_embedder.weight", &x_emb));
    GGDIFF_TRY(need2("cap_embedder.1.weight", &cap1));
    GGDIFF_TRY(need2("t_embedder.mlp.0.weight", &t0));
    GGDIFF_TRY(need2("t_embedder.mlp.2.weight", &t2));
    GGDIFF_TRY(need2("layers.0.attention.qkv.weight", &qkv));
    GGDIFF_TRY(need2("layers.0.attention.out.weight", &out));
    GGDIFF_TRY(need2("layers.0.feed_forward.w1.weight", &w1));
    GGDIFF_TRY(need2("final_layer.linear.weight", &final_lin));
    cfg.width = x_emb->shape[0];
    const int64_t pp = static_cast<int64_t>(cfg.patch) * cfg.patch;
    if (x_emb->shape[1] % pp || final_lin->shape[0] != x_emb->shape[1]) {
        return Status::Error(prefix + "x_embedder.weight / final_layer.linear.weight: " +
                             std::to_string(x_emb->shape[1]) + " in and " +
                             std::to_string(final_lin->shape[0]) +
                             " out features are not the same 2x2 patches of a latent");
    }
    cfg.latent_channels = x_emb->shape[1] / pp;
    cfg.cap_width = cap1->shape[1];
    if (cap1->shape[0] != cfg.width) {
        return Status::Error(prefix + "cap_embedder.1.weight: maps to " +
                             std::to_string(cap1->shape[0]) + ", the model is " +
                             std::to_string(cfg.width) + " wide");
    }
    cfg.t_width = t0->shape[0];
    cfg.adaln_width = t2->shape[0];
    const TensorInfo* qn = index.find(prefix + "layers.0.attention.q_norm.weight");
    if (!qn || qn->shape.empty()) {
        return Status::Error("missing tensor " + prefix + "layers.0.attention.q_norm.weight");
    }
    cfg.head_dim = qn->shape.back();
    int sum = 0;
    for (int a : cfg.axes_dim) sum += a;
    if (cfg.head_dim != sum) {
        return Status::Error(prefix + "layers.0.attention.q_norm.weight: heads of " +
                             std::to_string(cfg.head_dim) + " (the 3-axis RoPE covers " +
                             std::to_string(sum) + ")");
    }
    if (out->shape[1] % cfg.head_dim) {
        return Status::Error(prefix +
                             "layers.0.attention.out.weight: " + std::to_string(out->shape[1]) +
                             " inputs are not whole heads of " + std::to_string(cfg.head_dim));
    }
    cfg.heads = out->shape[1] / cfg.head_dim;
    const int64_t qkv_heads = qkv->shape[0] / cfg.head_dim;
    cfg.kv_heads = (qkv_heads - cfg.heads) / 2;
    if (qkv->shape[0] % cfg.head_dim || cfg.kv_heads <= 0 ||
        cfg.heads + 2 * cfg.kv_heads != qkv_heads || cfg.heads % cfg.kv_heads) {
        return Status::Error(
            prefix + "layers.0.attention.qkv.weight: " + std::to_string(qkv->shape[0]) +
            " rows are not " + std::to_string(cfg.heads) +
            " query heads plus key and value heads of " + std::to_string(cfg.head_dim));
    }
    cfg.ffn = w1->shape[0];
    cfg.layers = count_blocks(index, prefix + "layers.", ".attention.qkv.weight");
    cfg.noise_refiners = count_blocks(index, prefix + "noise_refiner.", ".attention.qkv.weight");
    cfg.context_refiners =
        count_blocks(index, prefix + "context_refiner.", ".attention.qkv.weight");
    for (const char* pad : {"cap_pad_token", "x_pad_token"}) {
        if (!index.has(prefix + pad)) return Status::Error("missing tensor " + prefix + pad);
    }
    return cfg;
}

ZImageTokens z_image_tokens(const ZImageConfig& cfg, int64_t latent_w, int64_t latent_h,
                            int64_t text_tokens) {
    ZImageTokens t;
    t.text = text_tokens;
    t.text_padded = round_up(text_tokens, cfg.pad_multiple);
    t.grid_w = (latent_w + cfg.patch - 1) / cfg.patch;
    t.grid_h = (latent_h + cfg.patch - 1) / cfg.patch;
    t.image = t.grid_w * t.grid_h;
    t.image_padded = round_up(t.image, cfg.pad_multiple);
    return t;
}

std::vector<float> z_image_position_ids(const ZImageTokens& t) {
    std::vector<float> ids(static_cast<size_t>(3 * t.total()), 0.0f);
    for (int64_t i = 0; i < t.text_padded; ++i) ids[3 * i] = static_cast<float>(i + 1);
    const float frame = static_cast<float>(t.text_padded + 1);
    for (int64_t y = 0; y < t.grid_h; ++y) {
        for (int64_t x = 0; x < t.grid_w; ++x) {
            const size_t k = 3 * static_cast<size_t>(t.text_padded + y * t.grid_w + x);
            ids[k] = frame;
            ids[k + 1] = static_cast<float>(y);
            ids[k + 2] = static_cast<float>(x);
        }
    }
    return ids;  // image padding stays (0, 0, 0)
}

ZImageRope z_image_rope(const ZImageConfig& cfg, const ZImageTokens& t, nn::RopeWrap wrap) {
    const std::vector<float> ids = z_image_position_ids(t);
    std::vector<int> wrap_lengths;
    nn::wrap_grid(wrap_lengths, 3, t.text_padded, t.grid_h, t.grid_w, wrap);
    ZImageRope r;
    for (int a : cfg.axes_dim) r.pairs += a / 2;
    r.tokens = t.total();
    r.cos.resize(static_cast<size_t>(r.pairs * r.tokens));
    r.sin.resize(r.cos.size());
    for (int64_t tk = 0; tk < r.tokens; ++tk) {
        int64_t offset = 0;
        for (size_t a = 0; a < cfg.axes_dim.size(); ++a) {
            const int dim = cfg.axes_dim[a];
            const size_t at = static_cast<size_t>(3 * tk) + a;
            const float pos = ids[at];
            const int wrap_len = at < wrap_lengths.size() ? wrap_lengths[at] : 0;
            for (int j = 0; j < dim / 2; ++j) {
                const float omega = 1.0f / std::pow(cfg.theta, 2.0f * j / dim);
                const float angle = nn::rope_angle(pos, omega, wrap_len);
                const size_t i = static_cast<size_t>(tk * r.pairs + offset + j);
                r.cos[i] = std::cos(angle);
                r.sin[i] = std::sin(angle);
            }
            offset += dim / 2;
        }
    }
    return r;
}

ggml_tensor* build_z_image_block(nn::Ctx& c, const ZImageConfig& cfg, const std::string& name,
                                 ggml_tensor* x, ggml_tensor* temb, ggml_tensor* cos,
                                 ggml_tensor* sin) {
    return block(c, cfg, name, x, temb, cos, sin);
}

ggml_tensor* build_z_image(nn::Ctx& c, const ZImageConfig& cfg, ggml_tensor* x,
                           ggml_tensor* timesteps, ggml_tensor* context, ggml_tensor* cos,
                           ggml_tensor* sin) {
    ggml_context* ctx = c.ctx;
    const std::string& p = cfg.prefix;
    const int64_t W = x->ne[0], H = x->ne[1];
    const ZImageTokens t = z_image_tokens(cfg, W, H, context->ne[1]);

    ggml_tensor* temb = ggml_timestep_embedding(ctx, timesteps, 256, 10000);
    temb = nn::linear(c, temb, p + "t_embedder.mlp.0", 256, cfg.t_width);
    temb =
        nn::linear(c, ggml_silu(ctx, temb), p + "t_embedder.mlp.2", cfg.t_width, cfg.adaln_width);

    ggml_tensor* txt = rms(c, context, p + "cap_embedder.0.weight", cfg.cap_width, cfg.eps);
    txt = nn::linear(c, txt, p + "cap_embedder.1", cfg.cap_width, cfg.width);
    txt = pad_tokens(c, txt, p + "cap_pad_token", t.text_padded);

    const int pw = static_cast<int>(t.grid_w * cfg.patch - W);
    const int ph = static_cast<int>(t.grid_h * cfg.patch - H);
    // Seamless tiling pads a latent that is not whole patches by wrap-around.
    const KernelChoices k = kernel_choices(ctx);
    ggml_tensor* img = patchify(
        ctx, pw || ph ? nn::pad_wrap(ctx, x, 0, pw, 0, ph, k.circular_x, k.circular_y) : x);
    img = nn::linear(c, img, p + "x_embedder", img->ne[0], cfg.width);
    img = pad_tokens(c, img, p + "x_pad_token", t.image_padded);

    ggml_tensor* txt_cos = angle_range(ctx, cos, 0, t.text_padded);
    ggml_tensor* txt_sin = angle_range(ctx, sin, 0, t.text_padded);
    ggml_tensor* img_cos = angle_range(ctx, cos, t.text_padded, t.image_padded);
    ggml_tensor* img_sin = angle_range(ctx, sin, t.text_padded, t.image_padded);
    for (int64_t i = 0; i < cfg.context_refiners; ++i) {
        txt = block(c, cfg, p + "context_refiner." + std::to_string(i) + ".", txt, nullptr, txt_cos,
                    txt_sin);
    }
    for (int64_t i = 0; i < cfg.noise_refiners; ++i) {
        img = block(c, cfg, p + "noise_refiner." + std::to_string(i) + ".", img, temb, img_cos,
                    img_sin);
    }

    ggml_tensor* u = ggml_concat(ctx, txt, img, 1);  // text first, then the image
    for (int64_t i = 0; i < cfg.layers; ++i) {
        u = block(c, cfg, p + "layers." + std::to_string(i) + ".", u, temb, cos, sin);
    }

    u = nn::token_range(ctx, u, t.text_padded, t.image);
    ggml_tensor* scale = nn::linear(c, ggml_silu(ctx, temb), p + "final_layer.adaLN_modulation.1",
                                    cfg.adaln_width, cfg.width);
    scale = ggml_reshape_3d(ctx, scale, cfg.width, 1, scale->ne[1]);
    u = scale_by(ctx, ggml_norm(ctx, u, 1e-6f), scale);
    u = nn::linear(c, u, p + "final_layer.linear", cfg.width, 4 * cfg.latent_channels);

    return ggml_scale(ctx, nn::crop_latent(ctx, unpatchify(ctx, u, t.grid_w, t.grid_h), W, H),
                      -1.0f);
}

}  // namespace ggdiff::models
