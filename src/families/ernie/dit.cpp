#include "families/ernie/dit.h"

#include <ggml.h>

#include <cmath>

#include "nn/dit.h"
#include "nn/layers.h"

namespace ggdiff::models {

namespace {

const TensorInfo* find_nd(const TensorIndex& index, const std::string& name, size_t dims) {
    const TensorInfo* t = index.find(name);
    return t && t->shape.size() == dims ? t : nullptr;
}

// x [d * heads, T, N] -> per-head RMSNorm by `name` ([d]), as [d, heads, T, N].
ggml_tensor* head_rms(nn::Ctx& c, ggml_tensor* x, const std::string& name, int64_t d, float eps) {
    x = ggml_reshape_4d(c.ctx, x, d, x->ne[0] / d, x->ne[1], x->ne[2]);
    return ggml_mul(c.ctx, ggml_rms_norm(c.ctx, x, eps), c.W(name, {d}));
}

// ERNIE-Image's rotate-half RoPE of x [d, heads, T, N] with cos/sin [d, 1, T] (see dit.h).
ggml_tensor* rope(ggml_context* ctx, ggml_tensor* x, ggml_tensor* cos, ggml_tensor* sin) {
    const int64_t half = x->ne[0] / 2;
    const size_t es = ggml_element_size(x);
    ggml_tensor* lo = ggml_cont(ctx, ggml_view_4d(ctx, x, half, x->ne[1], x->ne[2], x->ne[3],
                                                  x->nb[1], x->nb[2], x->nb[3], 0));
    ggml_tensor* hi = ggml_cont(ctx, ggml_view_4d(ctx, x, half, x->ne[1], x->ne[2], x->ne[3],
                                                  x->nb[1], x->nb[2], x->nb[3], half * es));
    ggml_tensor* rotated = ggml_concat(ctx, ggml_neg(ctx, hi), lo, 0);
    return ggml_add(ctx, ggml_mul(ctx, x, cos), ggml_mul(ctx, rotated, sin));
}

ggml_tensor* attention(nn::Ctx& c, const ErnieImageConfig& cfg, const std::string& p,
                       ggml_tensor* x, ggml_tensor* cos, ggml_tensor* sin) {
    ggml_context* ctx = c.ctx;
    const int64_t w = cfg.hidden, d = cfg.head_dim, t = x->ne[1], n = x->ne[2];
    const int64_t inner = cfg.heads * d;
    ggml_tensor* q = nn::linear(c, x, p + "to_q", w, inner, false);
    ggml_tensor* k = nn::linear(c, x, p + "to_k", w, inner, false);
    ggml_tensor* v = nn::linear(c, x, p + "to_v", w, inner, false);
    q = rope(ctx, head_rms(c, q, p + "norm_q.weight", d, cfg.eps), cos, sin);
    k = rope(ctx, head_rms(c, k, p + "norm_k.weight", d, cfg.eps), cos, sin);
    q = ggml_reshape_3d(ctx, q, inner, t, n);
    k = ggml_reshape_3d(ctx, k, inner, t, n);
    ggml_tensor* o = nn::attention(ctx, q, k, v, static_cast<int>(cfg.heads));
    return nn::linear(c, o, p + "to_out.0", inner, w, false);
}

ggml_tensor* mlp(nn::Ctx& c, const ErnieImageConfig& cfg, const std::string& p, ggml_tensor* x) {
    ggml_tensor* g =
        ggml_gelu(c.ctx, nn::linear(c, x, p + "gate_proj", cfg.hidden, cfg.ffn, false));
    ggml_tensor* u = nn::linear(c, x, p + "up_proj", cfg.hidden, cfg.ffn, false);
    return nn::linear(c, ggml_mul(c.ctx, u, g), p + "linear_fc2", cfg.ffn, cfg.hidden, false);
}

// Chunk k of the shared modulation m [6 * hidden, N] as [hidden, 1, N].
ggml_tensor* chunk(ggml_context* ctx, ggml_tensor* m, int64_t hidden, int k) {
    const size_t es = ggml_element_size(m);
    return ggml_cont(ctx, ggml_view_3d(ctx, m, hidden, 1, m->ne[1], m->nb[1], m->nb[1],
                                       static_cast<size_t>(k) * hidden * es));
}

ggml_tensor* layer(nn::Ctx& c, const ErnieImageConfig& cfg, const std::string& p, ggml_tensor* x,
                   ggml_tensor* const mod[6], ggml_tensor* cos, ggml_tensor* sin) {
    ggml_context* ctx = c.ctx;
    ggml_tensor* a = nn::rms_norm(c, x, p + "adaLN_sa_ln.weight", cfg.hidden, cfg.eps);
    a = attention(c, cfg, p + "self_attention.", nn::modulate(ctx, a, mod[0], mod[1]), cos, sin);
    x = ggml_add(ctx, x, ggml_mul(ctx, a, mod[2]));
    ggml_tensor* f = nn::rms_norm(c, x, p + "adaLN_mlp_ln.weight", cfg.hidden, cfg.eps);
    f = mlp(c, cfg, p + "mlp.", nn::modulate(ctx, f, mod[3], mod[4]));
    return ggml_add(ctx, x, ggml_mul(ctx, f, mod[5]));
}

// Tokens [C * p * p, w * h, N] (features: patch position major, channel fastest) -> latent
// [w * p, h * p, C, N].
ggml_tensor* unpatchify(ggml_context* ctx, ggml_tensor* x, int64_t w, int64_t h, int p) {
    const int64_t ch = x->ne[0] / (p * p), n = x->ne[2];
    if (p == 1) return nn::tokens_to_image(ctx, x, w, h);
    x = ggml_reshape_4d(ctx, x, ch, p * p, w * h, n);
    x = ggml_cont(ctx, ggml_permute(ctx, x, 2, 0, 1, 3));  // [p*p, w*h, C, N]
    x = ggml_reshape_4d(ctx, x, p, p, w, h * ch * n);      // [px, py, w, rest]
    x = ggml_cont(ctx, ggml_permute(ctx, x, 0, 2, 1, 3));  // [px, w, py, rest]
    return ggml_reshape_4d(ctx, x, w * p, h * p, ch, n);
}

}  // namespace

bool is_ernie_image(const TensorIndex& index, const std::string& prefix) {
    return index.has(prefix + "layers.0.adaLN_sa_ln.weight");
}

Result<ErnieImageConfig> detect_ernie_image(const TensorIndex& index, const std::string& prefix) {
    ErnieImageConfig cfg;
    cfg.prefix = prefix;
    auto need = [&](const std::string& name, size_t dims, const TensorInfo** out) -> Status {
        *out = find_nd(index, prefix + name, dims);
        if (*out) return Status::Ok();
        const TensorInfo* t = index.find(prefix + name);
        if (!t) return Status::Error("missing tensor " + prefix + name);
        return Status::Error(prefix + name + ": " + std::to_string(t->shape.size()) +
                             " dimensions, ERNIE-Image's has " + std::to_string(dims));
    };
    const TensorInfo *x_emb, *norm_q, *gate, *q, *final_lin;
    GGDIFF_TRY(need("x_embedder.proj.weight", 4, &x_emb));
    GGDIFF_TRY(need("layers.0.self_attention.norm_q.weight", 1, &norm_q));
    GGDIFF_TRY(need("layers.0.self_attention.to_q.weight", 2, &q));
    GGDIFF_TRY(need("layers.0.mlp.gate_proj.weight", 2, &gate));
    GGDIFF_TRY(need("final_linear.weight", 2, &final_lin));
    // torch shapes: x_embedder.proj [hidden, in, p, p].
    cfg.hidden = x_emb->shape[0];
    cfg.in_channels = x_emb->shape[1];
    cfg.patch = static_cast<int>(x_emb->shape[3]);
    if (cfg.patch < 1 || x_emb->shape[2] != x_emb->shape[3]) {
        return Status::Error(prefix + "x_embedder.proj.weight: a " +
                             std::to_string(x_emb->shape[2]) + "x" +
                             std::to_string(x_emb->shape[3]) + " kernel is not a square patch");
    }
    cfg.head_dim = norm_q->shape[0];
    int rope_dims = 0;
    for (int a : cfg.axes_dim) rope_dims += a;
    if (cfg.head_dim != rope_dims || cfg.hidden % cfg.head_dim) {
        return Status::Error(prefix + "layers.0.self_attention.norm_q.weight: heads of " +
                             std::to_string(cfg.head_dim) + " (ERNIE-Image's RoPE covers " +
                             std::to_string(rope_dims) + ") in a model " +
                             std::to_string(cfg.hidden) + " wide");
    }
    cfg.heads = cfg.hidden / cfg.head_dim;
    if (q->shape[0] != cfg.hidden || q->shape[1] != cfg.hidden) {
        return Status::Error(prefix + "layers.0.self_attention.to_q.weight: [" +
                             std::to_string(q->shape[0]) + ", " + std::to_string(q->shape[1]) +
                             "], the model is " + std::to_string(cfg.hidden) + " wide");
    }
    cfg.ffn = gate->shape[0];
    const int64_t pp = static_cast<int64_t>(cfg.patch) * cfg.patch;
    if (final_lin->shape[1] != cfg.hidden || final_lin->shape[0] % pp) {
        return Status::Error(prefix + "final_linear.weight: [" +
                             std::to_string(final_lin->shape[0]) + ", " +
                             std::to_string(final_lin->shape[1]) + "] is not whole " +
                             std::to_string(cfg.patch) + "x" + std::to_string(cfg.patch) +
                             " patches of a model " + std::to_string(cfg.hidden) + " wide");
    }
    cfg.out_channels = final_lin->shape[0] / pp;
    const TensorInfo* tp = index.find(prefix + "text_proj.weight");
    cfg.text_proj = tp != nullptr;
    if (tp) {
        if (tp->shape.size() != 2 || tp->shape[0] != cfg.hidden) {
            return Status::Error(prefix + "text_proj.weight: not a linear to " +
                                 std::to_string(cfg.hidden) + " features");
        }
        cfg.text_width = tp->shape[1];
    } else {
        cfg.text_width = cfg.hidden;
    }
    cfg.layers = 0;
    while (index.has(prefix + "layers." + std::to_string(cfg.layers) + ".adaLN_sa_ln.weight")) {
        ++cfg.layers;
    }
    for (const char* name : {"time_embedding.linear_1.weight", "time_embedding.linear_2.weight",
                             "adaLN_modulation.1.weight", "final_norm.linear.weight"}) {
        if (!index.has(prefix + name)) return Status::Error("missing tensor " + prefix + name);
    }
    return cfg;
}

ErnieImageRope ernie_image_rope(const ErnieImageConfig& cfg, int64_t grid_w, int64_t grid_h,
                                int64_t text_tokens, nn::RopeWrap wrap) {
    const int64_t image = grid_w * grid_h, tokens = image + text_tokens;
    std::vector<float> ids(static_cast<size_t>(3 * tokens), 0.0f);
    for (int64_t y = 0; y < grid_h; ++y) {
        for (int64_t x = 0; x < grid_w; ++x) {
            const size_t k = 3 * static_cast<size_t>(y * grid_w + x);
            ids[k] = static_cast<float>(text_tokens);
            ids[k + 1] = static_cast<float>(y);
            ids[k + 2] = static_cast<float>(x);
        }
    }
    for (int64_t j = 0; j < text_tokens; ++j) {
        ids[3 * static_cast<size_t>(image + j)] = static_cast<float>(j);
    }
    std::vector<int> wrap_lengths;
    nn::wrap_grid(wrap_lengths, 3, 0, grid_h, grid_w, wrap);
    const nn::RopeTable table = nn::rope_table(ids, cfg.axes_dim, cfg.theta, wrap_lengths);
    const int64_t d = 2 * table.pairs;
    ErnieImageRope r{HostTensor({d, 1, tokens}), HostTensor({d, 1, tokens})};
    for (int64_t t = 0; t < tokens; ++t) {
        for (int64_t i = 0; i < table.pairs; ++i) {
            const size_t from = static_cast<size_t>(t * table.pairs + i);
            for (int64_t e = 0; e < 2; ++e) {
                const size_t to = static_cast<size_t>(t * d + 2 * i + e);
                r.cos.data[to] = table.cos[from];
                r.sin.data[to] = table.sin[from];
            }
        }
    }
    return r;
}

ggml_tensor* build_ernie_image_layer(nn::Ctx& c, const ErnieImageConfig& cfg,
                                     const std::string& name, ggml_tensor* x, ggml_tensor* mod,
                                     ggml_tensor* cos, ggml_tensor* sin) {
    ggml_tensor* m[6];
    for (int k = 0; k < 6; ++k) m[k] = chunk(c.ctx, mod, cfg.hidden, k);
    return layer(c, cfg, name, x, m, cos, sin);
}

ggml_tensor* build_ernie_image(nn::Ctx& c, const ErnieImageConfig& cfg, ggml_tensor* x,
                               ggml_tensor* timesteps, ggml_tensor* context, ggml_tensor* cos,
                               ggml_tensor* sin) {
    ggml_context* ctx = c.ctx;
    const std::string& p = cfg.prefix;
    const int64_t W = x->ne[0], H = x->ne[1];
    const int64_t gw = W / cfg.patch, gh = H / cfg.patch, image = gw * gh;

    ggml_tensor* img = nn::conv2d(c, x, p + "x_embedder.proj", cfg.in_channels, cfg.hidden,
                                  cfg.patch, cfg.patch, 0, true);
    img = nn::image_to_tokens(ctx, img);  // [hidden, gw * gh, N]
    ggml_tensor* txt = context;
    if (cfg.text_proj) txt = nn::linear(c, txt, p + "text_proj", cfg.text_width, cfg.hidden, false);
    ggml_tensor* u = ggml_concat(ctx, img, txt, 1);  // the image first, then the text

    // Sinusoidal features of the timestep, the sine half first.
    const int64_t half = cfg.hidden / 2;
    ggml_tensor* f = ggml_timestep_embedding(ctx, timesteps, static_cast<int>(cfg.hidden), 10000);
    const size_t es = ggml_element_size(f);
    ggml_tensor* f_cos = ggml_view_2d(ctx, f, half, f->ne[1], f->nb[1], 0);
    ggml_tensor* f_sin = ggml_view_2d(ctx, f, half, f->ne[1], f->nb[1], half * es);
    f = ggml_concat(ctx, ggml_cont(ctx, f_sin), ggml_cont(ctx, f_cos), 0);
    ggml_tensor* temb = nn::linear(c, f, p + "time_embedding.linear_1", cfg.hidden, cfg.hidden);
    temb =
        nn::linear(c, ggml_silu(ctx, temb), p + "time_embedding.linear_2", cfg.hidden, cfg.hidden);

    const std::vector<ggml_tensor*> mod =
        nn::modulation(c, temb, p + "adaLN_modulation.1", cfg.hidden, 6);
    for (int64_t i = 0; i < cfg.layers; ++i) {
        u = layer(c, cfg, p + "layers." + std::to_string(i) + ".", u, mod.data(), cos, sin);
    }

    ggml_tensor* fm = nn::linear(c, temb, p + "final_norm.linear", cfg.hidden, 2 * cfg.hidden);
    ggml_tensor* scale = chunk(ctx, fm, cfg.hidden, 0);
    ggml_tensor* shift = chunk(ctx, fm, cfg.hidden, 1);
    u = nn::token_range(ctx, u, 0, image);
    u = nn::modulate(ctx, nn::layer_norm_plain(ctx, u, cfg.eps), shift, scale);
    u = nn::linear(c, u, p + "final_linear", cfg.hidden, cfg.out_channels * cfg.patch * cfg.patch);
    return unpatchify(ctx, u, gw, gh, cfg.patch);
}

}  // namespace ggdiff::models
