#include "models/te/clip_text.h"

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
    return cfg;
}

namespace {

ggml_tensor* clip_layer(nn::Ctx& c, const ClipTextConfig& cfg, ggml_tensor* x,
                        const std::string& p) {
    const int64_t d = cfg.width;
    ggml_tensor* h = nn::layer_norm(c, x, p + "layer_norm1", d);
    ggml_tensor* q = nn::linear(c, h, p + "self_attn.q_proj", d, d);
    ggml_tensor* k = nn::linear(c, h, p + "self_attn.k_proj", d, d);
    ggml_tensor* v = nn::linear(c, h, p + "self_attn.v_proj", d, d);
    h = nn::attention(c.ctx, q, k, v, static_cast<int>(cfg.heads), /*causal=*/true);
    x = ggml_add(c.ctx, x, nn::linear(c, h, p + "self_attn.out_proj", d, d));

    h = nn::layer_norm(c, x, p + "layer_norm2", d);
    h = nn::linear(c, h, p + "mlp.fc1", d, cfg.intermediate);
    h = cfg.quick_gelu ? ggml_gelu_quick(c.ctx, h) : ggml_gelu_erf(c.ctx, h);
    h = nn::linear(c, h, p + "mlp.fc2", cfg.intermediate, d);
    return ggml_add(c.ctx, x, h);
}

}  // namespace

std::vector<std::string> clip_layer_prefixes(const ClipTextConfig& cfg) {
    std::vector<std::string> out;
    for (int64_t i = 0; i < cfg.layers; ++i) {
        out.push_back(cfg.prefix + "encoder.layers." + std::to_string(i) + ".");
    }
    return out;
}

ggml_tensor* build_clip_text(nn::Ctx& c, const ClipTextConfig& cfg, ggml_tensor* tokens,
                             int clip_skip) {
    const std::string& p = cfg.prefix;
    const int64_t t = tokens->ne[0];
    const int64_t n = tokens->ne[1];
    ggml_tensor* tok_emb = c.W(p + "embeddings.token_embedding.weight", {cfg.width, cfg.vocab});
    ggml_tensor* pos_emb =
        c.W(p + "embeddings.position_embedding.weight", {cfg.width, cfg.positions});
    ggml_tensor* x = ggml_get_rows(c.ctx, tok_emb, ggml_reshape_1d(c.ctx, tokens, t * n));
    x = ggml_reshape_3d(c.ctx, x, cfg.width, t, n);
    ggml_tensor* pos = ggml_view_2d(c.ctx, pos_emb, cfg.width, t, pos_emb->nb[1], 0);
    if (pos_emb->type != GGML_TYPE_F32) pos = ggml_cast(c.ctx, pos, GGML_TYPE_F32);
    x = ggml_add(c.ctx, x, pos);
    if (clip_skip < 1) clip_skip = 1;
    const int64_t run = std::max<int64_t>(1, cfg.layers - (clip_skip - 1));
    const std::vector<std::string> layers = clip_layer_prefixes(cfg);
    for (int64_t i = 0; i < run; ++i) x = clip_layer(c, cfg, x, layers[static_cast<size_t>(i)]);
    return nn::layer_norm(c, x, p + "final_layer_norm", cfg.width);
}

}  // namespace ggdiff::models
