#include "families/boogu/dit.h"

#include <ggml.h>

#include <algorithm>

#include "nn/dit.h"
#include "nn/layers.h"

namespace ggdiff::models {

namespace {

// x * (1 + scale), scale [dim, 1, N].
ggml_tensor* scale_by(ggml_context* ctx, ggml_tensor* x, ggml_tensor* scale) {
    return ggml_add(ctx, x, ggml_mul(ctx, x, scale));
}

// residual + tanh(gate) * x, gate [dim, 1, N].
ggml_tensor* gated(ggml_context* ctx, ggml_tensor* residual, ggml_tensor* x, ggml_tensor* gate) {
    return ggml_add(ctx, residual, ggml_mul(ctx, x, ggml_tanh(ctx, gate)));
}

// Angles of tokens [first, first + count) of cos/sin [1, pairs, 1, T].
ggml_tensor* angle_range(ggml_context* ctx, ggml_tensor* a, int64_t first, int64_t count) {
    return ggml_view_4d(ctx, a, 1, a->ne[1], 1, count, a->nb[1], a->nb[2], a->nb[3],
                        static_cast<size_t>(first) * a->nb[3]);
}

struct Angles {
    ggml_tensor *cos, *sin;
    Angles range(ggml_context* ctx, int64_t first, int64_t count) const {
        return {angle_range(ctx, cos, first, count), angle_range(ctx, sin, first, count)};
    }
};

// Per-head RMSNorm of x [heads*d, T, N].
ggml_tensor* head_rms(nn::Ctx& c, ggml_tensor* x, const std::string& name, int64_t d, float eps) {
    const int64_t dim = x->ne[0], t = x->ne[1], n = x->ne[2];
    x = ggml_reshape_4d(c.ctx, x, d, dim / d, t, n);
    return ggml_reshape_3d(c.ctx, nn::rms_norm(c, x, name, d, eps), dim, t, n);
}

// Normed, rotated grouped-query attention of q [heads*d, T, N] over k, v [kv*d, T, N].
ggml_tensor* attend(nn::Ctx& c, const BooguConfig& cfg, const std::string& norms, ggml_tensor* q,
                    ggml_tensor* k, ggml_tensor* v, const Angles& a) {
    ggml_context* ctx = c.ctx;
    const int64_t d = cfg.head_dim;
    q = head_rms(c, q, norms + "norm_q.weight", d, 1e-5f);
    k = head_rms(c, k, norms + "norm_k.weight", d, 1e-5f);
    k = nn::expand_kv_heads(ctx, k, d, cfg.kv_heads, cfg.heads);
    v = nn::expand_kv_heads(ctx, ggml_cont(ctx, v), d, cfg.kv_heads, cfg.heads);
    return nn::rope_attention(ctx, q, k, v, a.cos, a.sin, static_cast<int>(cfg.heads));
}

// Self-attention "<p>to_q" ... "<p>to_out.0" of x [width, T, N].
ggml_tensor* self_attention(nn::Ctx& c, const BooguConfig& cfg, const std::string& p,
                            ggml_tensor* x, const Angles& a) {
    const int64_t qw = cfg.heads * cfg.head_dim, kw = cfg.kv_heads * cfg.head_dim;
    ggml_tensor* q = nn::linear(c, x, p + "to_q", cfg.width, qw, false);
    ggml_tensor* k = nn::linear(c, x, p + "to_k", cfg.width, kw, false);
    ggml_tensor* v = nn::linear(c, x, p + "to_v", cfg.width, kw, false);
    return nn::linear(c, attend(c, cfg, p, q, k, v, a), p + "to_out.0", qw, cfg.width, false);
}

ggml_tensor* feed_forward(nn::Ctx& c, const BooguConfig& cfg, const std::string& p,
                          ggml_tensor* x) {
    ggml_tensor* g = ggml_silu(c.ctx, nn::linear(c, x, p + "linear_1", cfg.width, cfg.ffn, false));
    ggml_tensor* u = nn::linear(c, x, p + "linear_3", cfg.width, cfg.ffn, false);
    return nn::linear(c, ggml_mul(c.ctx, g, u), p + "linear_2", cfg.ffn, cfg.width, false);
}

ggml_tensor* rms(nn::Ctx& c, const BooguConfig& cfg, ggml_tensor* x, const std::string& name) {
    return nn::rms_norm(c, x, name, cfg.width, cfg.eps);
}

// LuminaRMSNormZero "<p>": RMSNorm(x) * (1 + m[0]) and the modulation vectors m [width, 1, N]
// (m[1..3]) from linear(silu(temb)).
struct NormZero {
    ggml_tensor* x;
    ggml_tensor* m[4];
};
NormZero norm_zero(nn::Ctx& c, const BooguConfig& cfg, const std::string& p, ggml_tensor* x,
                   ggml_tensor* temb) {
    std::vector<ggml_tensor*> m = nn::modulation(c, temb, p + "linear", cfg.width, 4);
    NormZero r;
    for (int i = 0; i < 4; ++i) r.m[i] = m[static_cast<size_t>(i)];
    r.x = scale_by(c.ctx, rms(c, cfg, x, p + "norm.weight"), r.m[0]);
    return r;
}

// A refiner or single-stream block; temb null: the unmodulated context refiner.
ggml_tensor* block(nn::Ctx& c, const BooguConfig& cfg, const std::string& p, ggml_tensor* x,
                   ggml_tensor* temb, const Angles& a) {
    ggml_context* ctx = c.ctx;
    if (!temb) {
        ggml_tensor* h = self_attention(c, cfg, p + "attn.", rms(c, cfg, x, p + "norm1.weight"), a);
        x = ggml_add(ctx, x, rms(c, cfg, h, p + "norm2.weight"));
        h = feed_forward(c, cfg, p + "feed_forward.", rms(c, cfg, x, p + "ffn_norm1.weight"));
        return ggml_add(ctx, x, rms(c, cfg, h, p + "ffn_norm2.weight"));
    }
    const NormZero n = norm_zero(c, cfg, p + "norm1.", x, temb);
    ggml_tensor* h = self_attention(c, cfg, p + "attn.", n.x, a);
    x = gated(ctx, x, rms(c, cfg, h, p + "norm2.weight"), n.m[1]);
    h = scale_by(ctx, rms(c, cfg, x, p + "ffn_norm1.weight"), n.m[2]);
    h = feed_forward(c, cfg, p + "feed_forward.", h);
    return gated(ctx, x, rms(c, cfg, h, p + "ffn_norm2.weight"), n.m[3]);
}

// A double-stream layer over img [width, Li, N] (references and image) and txt [width, Lt, N];
// `joint` covers text then image, `image` the image stream alone.
void double_layer(nn::Ctx& c, const BooguConfig& cfg, const std::string& p, ggml_tensor** img,
                  ggml_tensor** txt, ggml_tensor* temb, const Angles& joint, const Angles& image) {
    ggml_context* ctx = c.ctx;
    const int64_t qw = cfg.heads * cfg.head_dim, kw = cfg.kv_heads * cfg.head_dim;
    const int64_t lt = (*txt)->ne[1], li = (*img)->ne[1];
    // Every norm reads the layer's input streams.
    const NormZero i1 = norm_zero(c, cfg, p + "img_norm1.", *img, temb);
    const NormZero i2 = norm_zero(c, cfg, p + "img_norm2.", *img, temb);
    const NormZero i3 = norm_zero(c, cfg, p + "img_norm3.", *img, temb);
    const NormZero t1 = norm_zero(c, cfg, p + "instruct_norm1.", *txt, temb);
    const NormZero t2 = norm_zero(c, cfg, p + "instruct_norm2.", *txt, temb);

    // Joint attention: per-stream projections, text first.
    const std::string ja = p + "img_instruct_attn.", pr = ja + "processor.";
    auto proj = [&](ggml_tensor* x, const char* stream, const char* which, int64_t rows) {
        return nn::linear(c, x, pr + stream + "_to_" + which, cfg.width, rows, false);
    };
    ggml_tensor* q =
        ggml_concat(ctx, proj(t1.x, "instruct", "q", qw), proj(i1.x, "img", "q", qw), 1);
    ggml_tensor* k =
        ggml_concat(ctx, proj(t1.x, "instruct", "k", kw), proj(i1.x, "img", "k", kw), 1);
    ggml_tensor* v =
        ggml_concat(ctx, proj(t1.x, "instruct", "v", kw), proj(i1.x, "img", "v", kw), 1);
    ggml_tensor* o = attend(c, cfg, ja, q, k, v, joint);
    ggml_tensor* o_txt =
        nn::linear(c, nn::token_range(ctx, o, 0, lt), pr + "instruct_out", qw, cfg.width, false);
    ggml_tensor* o_img =
        nn::linear(c, nn::token_range(ctx, o, lt, li), pr + "img_out", qw, cfg.width, false);
    o = nn::linear(c, ggml_concat(ctx, o_txt, o_img, 1), ja + "to_out.0", cfg.width, cfg.width,
                   false);
    o_txt = nn::token_range(ctx, o, 0, lt);
    o_img = nn::token_range(ctx, o, lt, li);

    ggml_tensor* self = self_attention(c, cfg, p + "img_self_attn.", i3.x, image);

    ggml_tensor* x = gated(ctx, *img, rms(c, cfg, o_img, p + "img_attn_norm.weight"), i1.m[1]);
    x = gated(ctx, x, rms(c, cfg, self, p + "img_self_attn_norm.weight"), i3.m[1]);
    ggml_tensor* h = ggml_add(ctx, scale_by(ctx, i2.x, i1.m[2]), i2.m[1]);
    h = feed_forward(c, cfg, p + "img_feed_forward.", rms(c, cfg, h, p + "img_ffn_norm1.weight"));
    *img = gated(ctx, x, rms(c, cfg, h, p + "img_ffn_norm2.weight"), i1.m[3]);

    x = gated(ctx, *txt, rms(c, cfg, o_txt, p + "instruct_attn_norm.weight"), t1.m[1]);
    h = ggml_add(ctx, scale_by(ctx, t2.x, t1.m[2]), t2.m[1]);
    h = feed_forward(c, cfg, p + "instruct_feed_forward.",
                     rms(c, cfg, h, p + "instruct_ffn_norm1.weight"));
    *txt = gated(ctx, x, rms(c, cfg, h, p + "instruct_ffn_norm2.weight"), t1.m[3]);
}

// Latent [W, H, C, N] -> patch tokens [p*p*C, w*h, N], the channel fastest (the latent padded
// to whole patches with zeros).
ggml_tensor* patch_tokens(ggml_context* ctx, ggml_tensor* x, int p) {
    const int64_t C = x->ne[2];
    x = nn::patchify(ctx, nn::pad_to_patch(ctx, x, p), p);  // features (c, row, column)
    const int64_t t = x->ne[1], n = x->ne[2];
    x = ggml_reshape_4d(ctx, x, p * p, C, t, n);
    x = ggml_cont(ctx, ggml_permute(ctx, x, 1, 0, 2, 3));  // [C, p*p, T, N]
    return ggml_reshape_3d(ctx, x, p * p * C, t, n);
}

ggml_tensor* tokens_to_latent(ggml_context* ctx, ggml_tensor* x, int64_t w, int64_t h, int p) {
    const int64_t C = x->ne[0] / (p * p), t = x->ne[1], n = x->ne[2];
    x = ggml_reshape_4d(ctx, x, C, p * p, t, n);
    x = ggml_cont(ctx, ggml_permute(ctx, x, 1, 0, 2, 3));  // [p*p, C, T, N]
    return nn::unpatchify(ctx, ggml_reshape_3d(ctx, x, p * p * C, t, n), w, h, p);
}

const TensorInfo* find_dims(const TensorIndex& index, const std::string& name, size_t dims) {
    const TensorInfo* t = index.find(name);
    return t && t->shape.size() == dims ? t : nullptr;
}

int64_t count_blocks(const TensorIndex& index, const std::string& base, const char* probe) {
    int64_t n = 0;
    while (index.has(base + std::to_string(n) + probe)) ++n;
    return n;
}

BooguGrid grid(int64_t w, int64_t h, int p) {
    return {(w + p - 1) / p, (h + p - 1) / p};
}

}  // namespace

bool is_boogu(const TensorIndex& index, const std::string& prefix) {
    return index.has(prefix + "double_stream_layers.0.img_instruct_attn.processor.img_to_q.weight");
}

Result<BooguConfig> detect_boogu(const TensorIndex& index, const std::string& prefix) {
    BooguConfig cfg;
    cfg.prefix = prefix;
    auto need = [&](const std::string& name, size_t dims, const TensorInfo** out) -> Status {
        *out = find_dims(index, prefix + name, dims);
        if (!*out) {
            return Status::Error("missing tensor " + prefix + name + " (a " + std::to_string(dims) +
                                 "-D weight)");
        }
        return Status::Ok();
    };
    const TensorInfo *x_emb, *cap1, *t1, *qn, *to_k, *ff1, *out2, *index_emb;
    GGDIFF_TRY(need("x_embedder.weight", 2, &x_emb));
    GGDIFF_TRY(need("time_caption_embed.caption_embedder.1.weight", 2, &cap1));
    GGDIFF_TRY(need("time_caption_embed.timestep_embedder.linear_1.weight", 2, &t1));
    GGDIFF_TRY(need("single_stream_layers.0.attn.norm_q.weight", 1, &qn));
    GGDIFF_TRY(need("single_stream_layers.0.attn.to_k.weight", 2, &to_k));
    GGDIFF_TRY(need("single_stream_layers.0.feed_forward.linear_1.weight", 2, &ff1));
    GGDIFF_TRY(need("norm_out.linear_2.weight", 2, &out2));
    GGDIFF_TRY(need("image_index_embedding", 2, &index_emb));
    cfg.width = x_emb->shape[0];
    const int64_t pp = static_cast<int64_t>(cfg.patch) * cfg.patch;
    if (x_emb->shape[1] % pp || out2->shape[0] != x_emb->shape[1]) {
        return Status::Error(prefix + "x_embedder.weight / norm_out.linear_2.weight: " +
                             std::to_string(x_emb->shape[1]) + " in and " +
                             std::to_string(out2->shape[0]) +
                             " out features are not the same 2x2 patches of a latent");
    }
    cfg.latent_channels = x_emb->shape[1] / pp;
    cfg.cap_width = cap1->shape[1];
    if (cap1->shape[0] != cfg.width) {
        return Status::Error(prefix + "time_caption_embed.caption_embedder.1.weight: maps to " +
                             std::to_string(cap1->shape[0]) + ", the model is " +
                             std::to_string(cfg.width) + " wide");
    }
    cfg.t_width = t1->shape[0];
    cfg.head_dim = qn->shape[0];
    if (cfg.head_dim <= 0 || cfg.width % cfg.head_dim || to_k->shape[0] % cfg.head_dim) {
        return Status::Error(prefix + "single_stream_layers.0.attn: heads of " +
                             std::to_string(cfg.head_dim) + " do not divide the width " +
                             std::to_string(cfg.width) + " and the key rows " +
                             std::to_string(to_k->shape[0]));
    }
    cfg.heads = cfg.width / cfg.head_dim;
    cfg.kv_heads = to_k->shape[0] / cfg.head_dim;
    if (cfg.kv_heads <= 0 || cfg.heads % cfg.kv_heads) {
        return Status::Error(
            prefix + "single_stream_layers.0.attn.to_k.weight: " + std::to_string(cfg.kv_heads) +
            " key heads do not serve " + std::to_string(cfg.heads) + " query heads");
    }
    // The reference's RoPE axes: 40 x 3 for heads of 120, else three equal thirds.
    const int axis = static_cast<int>(cfg.head_dim / 3);
    if (cfg.head_dim % 3 || axis % 2) {
        return Status::Error(prefix + "single_stream_layers.0.attn.norm_q.weight: heads of " +
                             std::to_string(cfg.head_dim) +
                             " are not three equal RoPE axes of whole pairs");
    }
    cfg.axes_dim = {axis, axis, axis};
    cfg.ffn = ff1->shape[0];
    if (index_emb->shape[0] < BooguConfig::kIndexEmbeddings || index_emb->shape[1] != cfg.width) {
        return Status::Error(prefix + "image_index_embedding: not " +
                             std::to_string(BooguConfig::kIndexEmbeddings) + " rows of " +
                             std::to_string(cfg.width));
    }
    cfg.single_layers = count_blocks(index, prefix + "single_stream_layers.", ".attn.to_q.weight");
    cfg.double_layers = count_blocks(index, prefix + "double_stream_layers.",
                                     ".img_instruct_attn.processor.img_to_q.weight");
    cfg.noise_refiners = count_blocks(index, prefix + "noise_refiner.", ".attn.to_q.weight");
    cfg.context_refiners = count_blocks(index, prefix + "context_refiner.", ".attn.to_q.weight");
    cfg.ref_refiners = count_blocks(index, prefix + "ref_image_refiner.", ".attn.to_q.weight");
    if (!index.has(prefix + "ref_image_patch_embedder.weight")) {
        return Status::Error("missing tensor " + prefix + "ref_image_patch_embedder.weight");
    }
    return cfg;
}

int64_t BooguTokens::ref_tokens() const {
    int64_t n = 0;
    for (const BooguGrid& g : refs) n += g.tokens();
    return n;
}

BooguTokens boogu_tokens(const BooguConfig& cfg, int64_t latent_w, int64_t latent_h,
                         int64_t text_tokens,
                         const std::vector<std::pair<int64_t, int64_t>>& refs) {
    BooguTokens t;
    t.text = text_tokens;
    for (const auto& [w, h] : refs) t.refs.push_back(grid(w, h, cfg.patch));
    t.image = grid(latent_w, latent_h, cfg.patch);
    return t;
}

std::vector<float> boogu_position_ids(const BooguTokens& t) {
    std::vector<float> ids;
    ids.reserve(static_cast<size_t>(3 * t.total()));
    for (int64_t i = 0; i < t.text; ++i) {
        const float pos = static_cast<float>(i);
        ids.insert(ids.end(), {pos, pos, pos});
    }
    int64_t shift = t.text;
    auto add_grid = [&](const BooguGrid& g) {
        for (int64_t y = 0; y < g.h; ++y) {
            for (int64_t x = 0; x < g.w; ++x) {
                ids.insert(ids.end(), {static_cast<float>(shift), static_cast<float>(y),
                                       static_cast<float>(x)});
            }
        }
    };
    for (const BooguGrid& g : t.refs) {
        add_grid(g);
        shift += std::max(g.w, g.h);
    }
    add_grid(t.image);
    return ids;
}

ggml_tensor* build_boogu_single_layer(nn::Ctx& c, const BooguConfig& cfg, const std::string& name,
                                      ggml_tensor* x, ggml_tensor* temb, ggml_tensor* cos,
                                      ggml_tensor* sin) {
    return block(c, cfg, name, x, temb, {cos, sin});
}

ggml_tensor* build_boogu(nn::Ctx& c, const BooguConfig& cfg, ggml_tensor* x, ggml_tensor* timesteps,
                         ggml_tensor* context, const std::vector<ggml_tensor*>& refs,
                         ggml_tensor* cos, ggml_tensor* sin) {
    ggml_context* ctx = c.ctx;
    const std::string& p = cfg.prefix;
    const int64_t W = x->ne[0], H = x->ne[1];
    std::vector<std::pair<int64_t, int64_t>> ref_sizes;
    for (ggml_tensor* r : refs) ref_sizes.emplace_back(r->ne[0], r->ne[1]);
    const BooguTokens t = boogu_tokens(cfg, W, H, context->ne[1], ref_sizes);
    const Angles all{cos, sin};

    // The model's time: 1 - sigma, times 1000 in the sinusoidal features.
    ggml_tensor* time = ggml_scale_bias(ctx, timesteps, -1.0f, 1000.0f);
    ggml_tensor* temb = ggml_timestep_embedding(ctx, time, 256, 10000);
    const std::string te = p + "time_caption_embed.";
    temb = nn::linear(c, temb, te + "timestep_embedder.linear_1", 256, cfg.t_width);
    temb = nn::linear(c, ggml_silu(ctx, temb), te + "timestep_embedder.linear_2", cfg.t_width,
                      cfg.t_width);

    ggml_tensor* txt =
        nn::rms_norm(c, context, te + "caption_embedder.0.weight", cfg.cap_width, cfg.eps);
    txt = nn::linear(c, txt, te + "caption_embedder.1", cfg.cap_width, cfg.width);

    const int64_t in = cfg.patch * cfg.patch * cfg.latent_channels;
    ggml_tensor* img =
        nn::linear(c, patch_tokens(ctx, x, cfg.patch), p + "x_embedder", in, cfg.width);
    ggml_tensor* ref = nullptr;
    ggml_tensor* index_emb = c.W(p + "image_index_embedding", {cfg.width, 5});
    if (index_emb->type != GGML_TYPE_F32) index_emb = ggml_cast(ctx, index_emb, GGML_TYPE_F32);
    for (size_t i = 0; i < refs.size(); ++i) {
        ggml_tensor* r = nn::linear(c, patch_tokens(ctx, refs[i], cfg.patch),
                                    p + "ref_image_patch_embedder", in, cfg.width);
        const int64_t row = std::min<int64_t>(static_cast<int64_t>(i), 4);
        r = ggml_add(ctx, r,
                     ggml_view_2d(ctx, index_emb, cfg.width, 1, index_emb->nb[1],
                                  static_cast<size_t>(row) * index_emb->nb[1]));
        ref = ref ? ggml_concat(ctx, ref, r, 1) : r;
    }

    const int64_t lt = t.text, lr = t.ref_tokens(), li = t.image.tokens();
    for (int64_t i = 0; i < cfg.context_refiners; ++i) {
        txt = block(c, cfg, p + "context_refiner." + std::to_string(i) + ".", txt, nullptr,
                    all.range(ctx, 0, lt));
    }
    for (int64_t i = 0; i < cfg.noise_refiners; ++i) {
        img = block(c, cfg, p + "noise_refiner." + std::to_string(i) + ".", img, temb,
                    all.range(ctx, lt + lr, li));
    }
    if (ref) {
        for (int64_t i = 0; i < cfg.ref_refiners; ++i) {
            ref = block(c, cfg, p + "ref_image_refiner." + std::to_string(i) + ".", ref, temb,
                        all.range(ctx, lt, lr));
        }
        img = ggml_concat(ctx, ref, img, 1);
    }

    const Angles image = all.range(ctx, lt, lr + li);
    for (int64_t i = 0; i < cfg.double_layers; ++i) {
        double_layer(c, cfg, p + "double_stream_layers." + std::to_string(i) + ".", &img, &txt,
                     temb, all, image);
    }
    ggml_tensor* u = ggml_concat(ctx, txt, img, 1);
    for (int64_t i = 0; i < cfg.single_layers; ++i) {
        u = block(c, cfg, p + "single_stream_layers." + std::to_string(i) + ".", u, temb, all);
    }

    ggml_tensor* scale =
        nn::linear(c, ggml_silu(ctx, temb), p + "norm_out.linear_1", cfg.t_width, cfg.width);
    scale = ggml_reshape_3d(ctx, scale, cfg.width, 1, scale->ne[1]);
    u = nn::token_range(ctx, u, lt + lr, li);
    u = scale_by(ctx, nn::layer_norm_plain(ctx, u, 1e-6f), scale);
    u = nn::linear(c, u, p + "norm_out.linear_2", cfg.width, in);
    u = tokens_to_latent(ctx, u, t.image.w, t.image.h, cfg.patch);
    return ggml_scale(ctx, nn::crop_latent(ctx, u, W, H), -1.0f);
}

}  // namespace ggdiff::models
