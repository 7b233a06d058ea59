#include "models/te/t5.h"

#include <cmath>
#include <cstdlib>

#include "io/checkpoint_file.h"
#include "nn/dit.h"
#include "nn/layers.h"

namespace ggdiff::models {
namespace {

Result<std::vector<int64_t>> shape_of(const TensorIndex& index, const std::string& name,
                                      size_t rank) {
    const TensorInfo* t = index.find(name);
    if (!t) return Status::Error("T5: missing tensor " + name);
    if (t->shape.size() != rank) {
        return Status::Error("T5: tensor " + name + " has shape " + shape_string(t->shape) +
                             ", expected " + std::to_string(rank) + " dimensions");
    }
    return t->shape;
}

std::string block(const T5Config& cfg, int64_t i) {
    return cfg.prefix + "encoder.block." + std::to_string(i) + ".";
}

// Relative position bias of one layer: [Tk, Tq, heads, 1].
ggml_tensor* position_bias(nn::Ctx& c, const T5Config& cfg, const std::string& attn,
                           ggml_tensor* buckets, int64_t t) {
    ggml_tensor* w =
        c.W(attn + "relative_attention_bias.weight", {cfg.heads, cfg.buckets});  // [H, B]
    ggml_tensor* b = ggml_get_rows(c.ctx, w, buckets);                           // [H, T*T]
    b = ggml_reshape_3d(c.ctx, b, cfg.heads, t, t);                              // [H, Tk, Tq]
    return ggml_cont(c.ctx, ggml_permute(c.ctx, b, 2, 0, 1, 3));                 // [Tk, Tq, H]
}

}  // namespace

Result<T5Config> detect_t5(const TensorIndex& index, const std::string& prefix) {
    T5Config cfg;
    cfg.prefix = prefix;
    // The token embedding is "shared" (tied with the decoder's) or the encoder's own copy.
    cfg.embedding =
        index.has(prefix + "shared.weight") || !index.has(prefix + "encoder.embed_tokens.weight")
            ? "shared.weight"
            : "encoder.embed_tokens.weight";
    auto shared = shape_of(index, prefix + cfg.embedding, 2);
    if (!shared.ok()) return shared.status();
    cfg.vocab = (*shared)[0];
    cfg.width = (*shared)[1];
    int64_t n = 0;
    while (index.has(block(cfg, n) + "layer.0.SelfAttention.q.weight")) ++n;
    if (n == 0) {
        return Status::Error("T5: missing tensor " + block(cfg, 0) +
                             "layer.0.SelfAttention.q.weight");
    }
    cfg.layers = n;
    const std::string a0 = block(cfg, 0) + "layer.0.SelfAttention.";
    auto q = shape_of(index, a0 + "q.weight", 2);
    if (!q.ok()) return q.status();
    cfg.inner = (*q)[0];
    auto rel = shape_of(index, a0 + "relative_attention_bias.weight", 2);
    if (!rel.ok()) return rel.status();
    cfg.buckets = (*rel)[0];
    cfg.heads = (*rel)[1];
    if (cfg.heads <= 0 || cfg.inner % cfg.heads != 0) {
        return Status::Error("T5: " + a0 + "relative_attention_bias.weight has " +
                             std::to_string(cfg.heads) + " heads, which do not divide the " +
                             std::to_string(cfg.inner) + " attention channels");
    }
    cfg.bias_per_layer =
        n > 1 && index.has(block(cfg, 1) + "layer.0.SelfAttention.relative_attention_bias.weight");
    const std::string ff = block(cfg, 0) + "layer.1.DenseReluDense.";
    cfg.gated = index.has(ff + "wi_0.weight");
    auto wi = shape_of(index, ff + (cfg.gated ? "wi_0.weight" : "wi.weight"), 2);
    if (!wi.ok()) return wi.status();
    cfg.ff = (*wi)[0];
    return cfg;
}

ggml_tensor* build_t5(nn::Ctx& c, const T5Config& cfg, ggml_tensor* tokens, ggml_tensor* buckets,
                      ggml_tensor* key_mask) {
    const int64_t t = tokens->ne[0], n = tokens->ne[1];
    const int64_t d = cfg.width;
    ggml_tensor* emb = c.W(cfg.prefix + cfg.embedding, {d, cfg.vocab});
    ggml_tensor* x = ggml_get_rows(c.ctx, emb, ggml_reshape_1d(c.ctx, tokens, t * n));
    x = ggml_reshape_3d(c.ctx, x, d, t, n);
    ggml_tensor* bias = nullptr;
    for (int64_t i = 0; i < cfg.layers; ++i) {
        const std::string b = block(cfg, i);
        const std::string a = b + "layer.0.SelfAttention.";
        if (i == 0 || cfg.bias_per_layer) bias = position_bias(c, cfg, a, buckets, t);
        ggml_tensor* h = nn::rms_norm(c, x, b + "layer.0.layer_norm.weight", d);
        ggml_tensor* q = nn::linear(c, h, a + "q", d, cfg.inner, false);
        ggml_tensor* k = nn::linear(c, h, a + "k", d, cfg.inner, false);
        ggml_tensor* v = nn::linear(c, h, a + "v", d, cfg.inner, false);
        h = nn::attention_biased(c.ctx, q, k, v, static_cast<int>(cfg.heads), bias, 1.0f, key_mask);
        x = ggml_add(c.ctx, x, nn::linear(c, h, a + "o", cfg.inner, d, false));

        const std::string f = b + "layer.1.DenseReluDense.";
        h = nn::rms_norm(c, x, b + "layer.1.layer_norm.weight", d);
        if (cfg.gated) {
            ggml_tensor* g = ggml_gelu(c.ctx, nn::linear(c, h, f + "wi_0", d, cfg.ff, false));
            h = ggml_mul(c.ctx, g, nn::linear(c, h, f + "wi_1", d, cfg.ff, false));
        } else {
            h = ggml_relu(c.ctx, nn::linear(c, h, f + "wi", d, cfg.ff, false));
        }
        x = ggml_add(c.ctx, x, nn::linear(c, h, f + "wo", cfg.ff, d, false));
    }
    return nn::rms_norm(c, x, cfg.prefix + "encoder.final_layer_norm.weight", d);
}

std::vector<int32_t> t5_relative_buckets(int64_t tokens, int64_t buckets, int64_t max_distance) {
    std::vector<int32_t> out(static_cast<size_t>(tokens * tokens));
    const int64_t half = buckets / 2;  // bidirectional: one half per direction
    const int64_t max_exact = half / 2;
    const float log_base =
        std::log(static_cast<float>(max_distance) / static_cast<float>(max_exact));
    for (int64_t q = 0; q < tokens; ++q) {
        for (int64_t k = 0; k < tokens; ++k) {
            const int64_t rel = k - q;
            int64_t bucket = rel > 0 ? half : 0;
            const int64_t dist = std::llabs(rel);
            if (dist < max_exact) {
                bucket += dist;
            } else {
                const float log_pos =
                    std::log(static_cast<float>(dist) / static_cast<float>(max_exact));
                int64_t large =
                    max_exact +
                    static_cast<int64_t>(log_pos / log_base * static_cast<float>(half - max_exact));
                bucket += std::min(large, half - 1);
            }
            out[static_cast<size_t>(q * tokens + k)] = static_cast<int32_t>(bucket);
        }
    }
    return out;
}

}  // namespace ggdiff::models
