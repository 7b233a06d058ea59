#include "models/te/clip_text.h"

#include <algorithm>

#include "nn/layers.h"

namespace ggdiff::models {

Result<ClipTextConfig> detect_clip_text(const TensorIndex& index, const std::string& prefix) {
    ClipTextConfig cfg;
    cfg.prefix = prefix;
    const std::string tok = prefix + "embeddings.token_embedding.weight";
    const TensorInfo* te = index.find(tok);
    if (!te || te->shape.size() != 2) return Status::Error("missing tensor " + tok);
    cfg.vocab = te->shape[0];
    cfg.width = te->shape[1];
    const std::string pos = prefix + "embeddings.position_embedding.weight";
    const TensorInfo* pe = index.find(pos);
    if (!pe || pe->shape.size() != 2) return Status::Error("missing tensor " + pos);
    cfg.positions = pe->shape[0];
    int64_t n = 0;
    while (index.has(prefix + "encoder.layers." + std::to_string(n) + ".self_attn.q_proj.weight")) {
        ++n;
    }
    if (n == 0) {
        return Status::Error("missing tensor " + prefix +
                             "encoder.layers.0.self_attn.q_proj.weight");
    }
    cfg.layers = n;
    const std::string fc1 = prefix + "encoder.layers.0.mlp.fc1.weight";
    const TensorInfo* f = index.find(fc1);
    if (!f || f->shape.size() != 2) return Status::Error("missing tensor " + fc1);
    cfg.intermediate = f->shape[0];
    cfg.heads = cfg.width / 64;
    // OpenAI's ViT-L/14 (width 768) uses quick GELU; OpenCLIP's larger encoders use GELU.
    cfg.quick_gelu = cfg.width == 768;
    // A projection for the pooled output, if the checkpoint has one.
    ClipTextConfig probe = cfg;
    for (auto kind : {ClipTextConfig::Projection::OpenClip, ClipTextConfig::Projection::Hf}) {
        probe.projection = kind;
        const TensorInfo* p = index.find(probe.projection_name());
        if (!p) continue;
        if (p->shape.size() != 2) {
            return Status::Error("tensor " + probe.projection_name() + " is not a matrix");
        }
        const bool open_clip = kind == ClipTextConfig::Projection::OpenClip;
        // open_clip's [width, proj] matrix is applied as a linear weight (see
        // build_clip), which needs it square, as it is in every OpenCLIP text tower.
        if (p->shape[1] != cfg.width || (open_clip && p->shape[0] != cfg.width)) {
            return Status::Error("tensor " + probe.projection_name() +
                                 " does not take the encoder's width " + std::to_string(cfg.width));
        }
        cfg.projection = kind;
        cfg.projection_dim = p->shape[0];
        break;
    }
    return cfg;
}

std::string ClipTextConfig::projection_name() const {
    // "<te>.text_model." -> "<te>.text_projection"
    const std::string tm = "text_model.";
    std::string base = prefix;
    if (base.size() >= tm.size() && base.compare(base.size() - tm.size(), tm.size(), tm) == 0) {
        base.resize(base.size() - tm.size());
    }
    switch (projection) {
        case Projection::OpenClip:
            return base + "text_projection";
        case Projection::Hf:
            return base + "text_projection.weight";
        default:
            return "";
    }
}

ggml_tensor* clip_encoder_layer(nn::Ctx& c, const ClipLayerShape& s, ggml_tensor* x,
                                const std::string& p) {
    const int64_t d = s.width;
    ggml_tensor* h = nn::layer_norm(c, x, p + "layer_norm1", d);
    ggml_tensor* q = nn::linear(c, h, p + "self_attn.q_proj", d, d);
    ggml_tensor* k = nn::linear(c, h, p + "self_attn.k_proj", d, d);
    ggml_tensor* v = nn::linear(c, h, p + "self_attn.v_proj", d, d);
    h = nn::attention(c.ctx, q, k, v, static_cast<int>(s.heads), s.causal);
    x = ggml_add(c.ctx, x, nn::linear(c, h, p + "self_attn.out_proj", d, d));

    h = nn::layer_norm(c, x, p + "layer_norm2", d);
    h = nn::linear(c, h, p + "mlp.fc1", d, s.intermediate);
    h = s.quick_gelu ? ggml_gelu_quick(c.ctx, h) : ggml_gelu_erf(c.ctx, h);
    h = nn::linear(c, h, p + "mlp.fc2", s.intermediate, d);
    return ggml_add(c.ctx, x, h);
}

namespace {

ggml_tensor* clip_layer(nn::Ctx& c, const ClipTextConfig& cfg, ggml_tensor* x,
                        const std::string& p) {
    return clip_encoder_layer(c, {cfg.width, cfg.heads, cfg.intermediate, cfg.quick_gelu, true}, x,
                              p);
}

}  // namespace

std::vector<std::string> clip_layer_prefixes(const ClipTextConfig& cfg) {
    std::vector<std::string> out;
    for (int64_t i = 0; i < cfg.layers; ++i) {
        out.push_back(cfg.prefix + "encoder.layers." + std::to_string(i) + ".");
    }
    return out;
}

namespace {

// Token + position embeddings: [width, t, n].
ggml_tensor* clip_embed(nn::Ctx& c, const ClipTextConfig& cfg, ggml_tensor* tokens,
                        const ClipTokenOverride* custom) {
    const std::string& p = cfg.prefix;
    const int64_t t = tokens->ne[0];
    const int64_t n = tokens->ne[1];
    ggml_tensor* tok_emb = c.W(p + "embeddings.token_embedding.weight", {cfg.width, cfg.vocab});
    ggml_tensor* pos_emb =
        c.W(p + "embeddings.position_embedding.weight", {cfg.width, cfg.positions});
    ggml_tensor* x = ggml_get_rows(c.ctx, tok_emb, ggml_reshape_1d(c.ctx, tokens, t * n));
    x = ggml_reshape_3d(c.ctx, x, cfg.width, t, n);
    if (custom && custom->vectors && custom->keep) {
        // Exact: rows kept are multiplied by 1 and get 0 added; replaced ones are 0 + vector.
        x = ggml_add(c.ctx, ggml_mul(c.ctx, x, custom->keep), custom->vectors);
    }
    ggml_tensor* pos = ggml_view_2d(c.ctx, pos_emb, cfg.width, t, pos_emb->nb[1], 0);
    if (pos_emb->type != GGML_TYPE_F32) pos = ggml_cast(c.ctx, pos, GGML_TYPE_F32);
    return ggml_add(c.ctx, x, pos);
}

// The final-normed state at token `at` [width, 1], projected when the model has a projection.
ggml_tensor* pool(nn::Ctx& c, const ClipTextConfig& cfg, ggml_tensor* normed, int64_t at) {
    at = std::clamp<int64_t>(at, 0, normed->ne[1] - 1);
    ggml_tensor* x = ggml_cont(c.ctx, ggml_view_2d(c.ctx, normed, cfg.width, 1, normed->nb[1],
                                                   static_cast<size_t>(at) * normed->nb[1]));
    switch (cfg.projection) {
        case ClipTextConfig::Projection::OpenClip:
            // open_clip computes x @ P with P stored [width, proj]; the reference engine
            // (stable-diffusion.cpp, whose images the golden tests hold) applies the stored
            // square matrix as a linear weight instead, i.e. x @ P^T. We follow it.
            return ggml_mul_mat(c.ctx, c.W(cfg.projection_name(), {cfg.width, cfg.projection_dim}),
                                x);
        case ClipTextConfig::Projection::Hf:
            return ggml_mul_mat(c.ctx, c.W(cfg.projection_name(), {cfg.width, cfg.projection_dim}),
                                x);
        default:
            return x;
    }
}

}  // namespace

ClipOutputs build_clip(nn::Ctx& c, const ClipTextConfig& cfg, ggml_tensor* tokens, int clip_skip,
                       bool final_norm, int64_t pooled_index, const ClipTokenOverride* custom) {
    if (clip_skip < 1) clip_skip = 1;
    const int64_t run = std::max<int64_t>(1, cfg.layers - (clip_skip - 1));
    const int64_t total = pooled_index >= 0 ? cfg.layers : run;
    const std::vector<std::string> layers = clip_layer_prefixes(cfg);
    const std::string norm = cfg.prefix + "final_layer_norm";
    ClipOutputs out;
    ggml_tensor* x = clip_embed(c, cfg, tokens, custom);
    for (int64_t i = 0; i < total; ++i) {
        x = clip_layer(c, cfg, x, layers[static_cast<size_t>(i)]);
        if (i + 1 == run) out.hidden = final_norm ? nn::layer_norm(c, x, norm, cfg.width) : x;
    }
    if (pooled_index >= 0) {
        ggml_tensor* normed =
            total == run && final_norm ? out.hidden : nn::layer_norm(c, x, norm, cfg.width);
        out.pooled = pool(c, cfg, normed, pooled_index);
    }
    return out;
}

ggml_tensor* build_clip_text(nn::Ctx& c, const ClipTextConfig& cfg, ggml_tensor* tokens,
                             int clip_skip, bool final_norm) {
    return build_clip(c, cfg, tokens, clip_skip, final_norm, -1).hidden;
}

}  // namespace ggdiff::models
