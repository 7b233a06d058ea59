#include "families/lens/dit.h"

#include <ggml.h>

#include <algorithm>

#include "core/log.h"
#include "io/name_util.h"
#include "nn/layers.h"

namespace ggdiff::models {

namespace {

// Per-head RMSNorm (eps 1e-5) of q or k [heads*d, T, N] with the weight `name` [d].
ggml_tensor* head_rms(nn::Ctx& c, ggml_tensor* x, const std::string& name, int64_t d) {
    const int64_t dim = x->ne[0], t = x->ne[1], n = x->ne[2];
    x = ggml_reshape_4d(c.ctx, ggml_cont(c.ctx, x), d, dim / d, t, n);
    return ggml_reshape_3d(c.ctx, nn::rms_norm(c, x, name, d, 1e-5f), dim, t, n);
}

// q, k, v of one stream from its fused projection `name` (3 x width rows, biased).
nn::QkvHeads qkv(nn::Ctx& c, const LensConfig& cfg, ggml_tensor* x, const std::string& name,
                 const std::string& norm_q, const std::string& norm_k) {
    const int64_t w = cfg.width;
    ggml_tensor* y = nn::linear(c, x, name, w, 3 * w);
    return {head_rms(c, nn::feature_rows(c.ctx, y, 0, w), norm_q, cfg.head_dim),
            head_rms(c, nn::feature_rows(c.ctx, y, w, w), norm_k, cfg.head_dim),
            ggml_cont(c.ctx, nn::feature_rows(c.ctx, y, 2 * w, w))};
}

ggml_tensor* swiglu(nn::Ctx& c, ggml_tensor* x, const std::string& p, int64_t dim, int64_t hidden) {
    ggml_tensor* g = ggml_silu(c.ctx, nn::linear(c, x, p + "w1", dim, hidden, false));
    ggml_tensor* u = nn::linear(c, x, p + "w3", dim, hidden, false);
    return nn::linear(c, ggml_mul(c.ctx, g, u), p + "w2", hidden, dim, false);
}

void block(nn::Ctx& c, const LensConfig& cfg, const std::string& p, ggml_tensor*& img,
           ggml_tensor*& txt, ggml_tensor* temb, ggml_tensor* cos, ggml_tensor* sin) {
    ggml_context* ctx = c.ctx;
    const int64_t dim = cfg.width;
    const std::vector<ggml_tensor*> im = nn::modulation(c, temb, p + "img_mod.1", dim, 6);
    const std::vector<ggml_tensor*> tm = nn::modulation(c, temb, p + "txt_mod.1", dim, 6);
    ggml_tensor* ia =
        nn::modulate(ctx, nn::rms_norm(c, img, p + "img_norm1.weight", dim), im[0], im[1]);
    ggml_tensor* ta =
        nn::modulate(ctx, nn::rms_norm(c, txt, p + "txt_norm1.weight", dim), tm[0], tm[1]);
    const std::string a = p + "attn.";
    const nn::QkvHeads iq =
        qkv(c, cfg, ia, a + "img_qkv", a + "norm_q.weight", a + "norm_k.weight");
    const nn::QkvHeads tq =
        qkv(c, cfg, ta, a + "txt_qkv", a + "norm_added_q.weight", a + "norm_added_k.weight");
    const int64_t n_img = img->ne[1], n_txt = txt->ne[1];
    ggml_tensor* o =
        nn::rope_attention(ctx, ggml_concat(ctx, iq.q, tq.q, 1), ggml_concat(ctx, iq.k, tq.k, 1),
                           ggml_concat(ctx, iq.v, tq.v, 1), cos, sin, static_cast<int>(cfg.heads));
    ggml_tensor* io = nn::linear(c, nn::token_range(ctx, o, 0, n_img), a + "to_out.0", dim, dim);
    ggml_tensor* to =
        nn::linear(c, nn::token_range(ctx, o, n_img, n_txt), a + "to_add_out", dim, dim);
    img = ggml_add(ctx, img, ggml_mul(ctx, io, im[2]));
    txt = ggml_add(ctx, txt, ggml_mul(ctx, to, tm[2]));

    ia = nn::modulate(ctx, nn::rms_norm(c, img, p + "img_norm2.weight", dim), im[3], im[4]);
    ta = nn::modulate(ctx, nn::rms_norm(c, txt, p + "txt_norm2.weight", dim), tm[3], tm[4]);
    img = ggml_add(ctx, img, ggml_mul(ctx, swiglu(c, ia, p + "img_mlp.", dim, cfg.mlp), im[5]));
    txt = ggml_add(ctx, txt, ggml_mul(ctx, swiglu(c, ta, p + "txt_mlp.", dim, cfg.mlp), tm[5]));
}

const TensorInfo* shape_of(const TensorIndex& index, const std::string& name, size_t dims) {
    const TensorInfo* t = index.find(name);
    return t && t->shape.size() == dims ? t : nullptr;
}

}  // namespace

bool is_lens(const TensorIndex& index, const std::string& prefix) {
    return index.has(prefix + "img_in.weight") && index.has(prefix + "txt_in.weight") &&
           index.has(prefix + "transformer_blocks.0.attn.norm_added_q.weight") &&
           index.has(prefix + "transformer_blocks.0.img_mlp.w1.weight");
}

Result<LensConfig> detect_lens(const TensorIndex& index, const std::string& prefix) {
    LensConfig cfg;
    cfg.prefix = prefix;
    const TensorInfo* img_in = shape_of(index, prefix + "img_in.weight", 2);
    const TensorInfo* txt_in = shape_of(index, prefix + "txt_in.weight", 2);
    const std::string b0 = prefix + "transformer_blocks.0.";
    const TensorInfo* norm_q = shape_of(index, b0 + "attn.norm_q.weight", 1);
    const TensorInfo* w1 = shape_of(index, b0 + "img_mlp.w1.weight", 2);
    const TensorInfo* txt_norm = shape_of(index, prefix + "txt_norm.0.weight", 1);
    const TensorInfo* proj_out = shape_of(index, prefix + "proj_out.weight", 2);
    if (!img_in) return Status::Error("missing tensor " + prefix + "img_in.weight");
    if (!txt_in) return Status::Error("missing tensor " + prefix + "txt_in.weight");
    if (!norm_q) return Status::Error("missing tensor " + b0 + "attn.norm_q.weight");
    if (!w1) return Status::Error("missing tensor " + b0 + "img_mlp.w1.weight");
    if (!txt_norm) return Status::Error("missing tensor " + prefix + "txt_norm.0.weight");
    if (!proj_out) return Status::Error("missing tensor " + prefix + "proj_out.weight");
    cfg.width = img_in->shape[0];
    cfg.channels = img_in->shape[1];
    cfg.head_dim = norm_q->shape[0];
    cfg.text_width = txt_norm->shape[0];
    cfg.mlp = w1->shape[0];
    if (cfg.head_dim <= 0 || cfg.width % cfg.head_dim) {
        return Status::Error(
            string_format("%sattn.norm_q.weight: heads of %lld do not divide the "
                          "width %lld",
                          b0.c_str(), (long long)cfg.head_dim, (long long)cfg.width));
    }
    cfg.heads = cfg.width / cfg.head_dim;
    int64_t rope = 0;
    for (int a : cfg.axes_dim) rope += a;
    if (rope != cfg.head_dim) {
        return Status::Error(string_format(
            "%sattn.norm_q.weight: heads of %lld; Lens's RoPE (axes 8, 28, 28) covers 64",
            b0.c_str(), (long long)cfg.head_dim));
    }
    cfg.text_states = 0;
    while (index.has(prefix + "txt_norm." + std::to_string(cfg.text_states) + ".weight")) {
        ++cfg.text_states;
    }
    if (txt_in->shape[1] != cfg.text_width * cfg.text_states || txt_in->shape[0] != cfg.width) {
        return Status::Error(string_format(
            "%stxt_in.weight is [%lld, %lld]; %lld text states of %lld into %lld expected",
            prefix.c_str(), (long long)txt_in->shape[0], (long long)txt_in->shape[1],
            (long long)cfg.text_states, (long long)cfg.text_width, (long long)cfg.width));
    }
    if (proj_out->shape[0] != cfg.channels || proj_out->shape[1] != cfg.width) {
        return Status::Error(string_format(
            "%sproj_out.weight is [%lld, %lld]; [%lld, %lld] expected (as many channels out as "
            "in)",
            prefix.c_str(), (long long)proj_out->shape[0], (long long)proj_out->shape[1],
            (long long)cfg.channels, (long long)cfg.width));
    }
    cfg.layers = 0;
    while (index.has(prefix + "transformer_blocks." + std::to_string(cfg.layers) +
                     ".img_mlp.w1.weight")) {
        ++cfg.layers;
    }
    return cfg;
}

LensRope lens_rope(const LensConfig& cfg, int64_t w, int64_t h, int64_t text_tokens,
                   nn::RopeWrap wrap) {
    const int64_t image = w * h, tokens = image + text_tokens;
    std::vector<float> ids(static_cast<size_t>(3 * tokens), 0.0f);
    const float y0 = static_cast<float>(-(h / 2)), x0 = static_cast<float>(-(w / 2));
    for (int64_t y = 0; y < h; ++y) {
        for (int64_t x = 0; x < w; ++x) {
            const size_t k = 3 * static_cast<size_t>(y * w + x);
            ids[k + 1] = y0 + static_cast<float>(y);
            ids[k + 2] = x0 + static_cast<float>(x);
        }
    }
    // The reference's linspace(start, start + L, L): steps of L / (L - 1), in float.
    const float start = static_cast<float>(std::max(h / 2, w / 2));
    const float step =
        text_tokens > 1 ? static_cast<float>(text_tokens) / static_cast<float>(text_tokens - 1) : 0;
    for (int64_t j = 0; j < text_tokens; ++j) {
        const float v = start + static_cast<float>(j) * step;
        for (size_t a = 0; a < 3; ++a) ids[3 * static_cast<size_t>(image + j) + a] = v;
    }
    std::vector<int> wrap_lengths;
    nn::wrap_grid(wrap_lengths, 3, 0, h, w, wrap);
    const nn::RopeTable table = nn::rope_table(ids, cfg.axes_dim, cfg.theta, wrap_lengths);
    LensRope r{HostTensor({1, table.pairs, 1, tokens}), HostTensor({1, table.pairs, 1, tokens})};
    r.cos.data = table.cos;
    r.sin.data = table.sin;
    return r;
}

ggml_tensor* build_lens(nn::Ctx& c, const LensConfig& cfg, ggml_tensor* x, ggml_tensor* timesteps,
                        ggml_tensor* context, ggml_tensor* cos, ggml_tensor* sin) {
    ggml_context* ctx = c.ctx;
    const std::string& p = cfg.prefix;
    const int64_t w = x->ne[0], h = x->ne[1], dim = cfg.width;

    // Timestep: 256 sinusoidal features of 1000 * sigma, linear_1, SiLU, linear_2.
    ggml_tensor* f = ggml_timestep_embedding(ctx, ggml_scale(ctx, timesteps, 1000.0f), 256, 10000);
    const std::string te = p + "time_text_embed.timestep_embedder.";
    ggml_tensor* temb = nn::linear(c, f, te + "linear_1", 256, dim);
    temb = nn::linear(c, ggml_silu(ctx, temb), te + "linear_2", dim, dim);

    ggml_tensor* img = nn::linear(c, nn::image_to_tokens(ctx, x), p + "img_in", cfg.channels, dim);

    // Each stacked LLM state RMS-normed on its own, then projected together.
    ggml_tensor* txt = nullptr;
    for (int64_t s = 0; s < cfg.text_states; ++s) {
        ggml_tensor* part =
            ggml_cont(ctx, nn::feature_rows(ctx, context, s * cfg.text_width, cfg.text_width));
        part = nn::rms_norm(c, part, p + "txt_norm." + std::to_string(s) + ".weight",
                            cfg.text_width, 1e-5f);
        txt = txt ? ggml_concat(ctx, txt, part, 0) : part;
    }
    txt = nn::linear(c, txt, p + "txt_in", cfg.text_width * cfg.text_states, dim);

    for (int64_t i = 0; i < cfg.layers; ++i) {
        block(c, cfg, p + "transformer_blocks." + std::to_string(i) + ".", img, txt, temb, cos,
              sin);
    }

    // norm_out: LayerNorm without affine * (1 + scale) + shift, (scale, shift) in that order.
    const std::vector<ggml_tensor*> m = nn::modulation(c, temb, p + "norm_out.linear", dim, 2);
    img = nn::modulate(ctx, nn::layer_norm_plain(ctx, img, 1e-6f), m[1], m[0]);
    img = nn::linear(c, img, p + "proj_out", dim, cfg.channels);
    return nn::tokens_to_image(ctx, img, w, h);
}

}  // namespace ggdiff::models
