#include "models/te/gpt_oss.h"

#include <ggml.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/log.h"
#include "io/name_util.h"
#include "models/te/qwen_llm.h"
#include "nn/layers.h"

namespace ggdiff::models {

namespace {

ggml_tensor* rms(nn::Ctx& c, ggml_tensor* x, const std::string& name, int64_t dim, float eps) {
    return ggml_mul(c.ctx, ggml_rms_norm(c.ctx, x, eps), c.W(name, {dim}));
}

// A weight the ops below need in f32 (biases of the expert ops, the sinks).
ggml_tensor* f32(ggml_context* ctx, ggml_tensor* t) {
    return t->type == GGML_TYPE_F32 ? t : ggml_cast(ctx, t, GGML_TYPE_F32);
}

// The expert linears of the selected experts: x [in, 1 or k, T] -> [out, k, T] plus each
// expert's bias.
ggml_tensor* expert_linear(nn::Ctx& c, ggml_tensor* x, const std::string& p, int64_t in,
                           int64_t out, int64_t experts, ggml_tensor* selected) {
    ggml_tensor* y = ggml_mul_mat_id(c.ctx, c.W(p + ".weight", {in, out, experts}), x, selected);
    return ggml_add_id(c.ctx, y, f32(c.ctx, c.W(p + ".bias", {out, experts})), selected);
}

ggml_tensor* rope(ggml_context* ctx, ggml_tensor* x, ggml_tensor* pos, const GptOssConfig& cfg) {
    return ggml_rope_ext(ctx, x, pos, nullptr, static_cast<int>(cfg.head_dim), GGML_ROPE_TYPE_NEOX,
                         cfg.rope_original_context, cfg.rope_theta, 1.0f / cfg.rope_factor, 1.0f,
                         1.0f, 32.0f, 1.0f);
}

// Attention with sinks: x [hidden, T, 1] (normed) -> [heads*d, T, 1].
ggml_tensor* attention(nn::Ctx& c, const GptOssConfig& cfg, const std::string& p, ggml_tensor* a,
                       ggml_tensor* pos, ggml_tensor* mask) {
    ggml_context* ctx = c.ctx;
    const int64_t h = cfg.hidden, d = cfg.head_dim, t = a->ne[1];
    const int64_t qw = cfg.heads * d, kw = cfg.kv_heads * d;
    ggml_tensor* q = nn::linear(c, a, p + "q_proj", h, qw, true);
    ggml_tensor* k = nn::linear(c, a, p + "k_proj", h, kw, true);
    ggml_tensor* v = nn::linear(c, a, p + "v_proj", h, kw, true);
    q = rope(ctx, ggml_reshape_3d(ctx, q, d, cfg.heads, t), pos, cfg);
    k = rope(ctx, ggml_reshape_3d(ctx, k, d, cfg.kv_heads, t), pos, cfg);
    q = ggml_cont(ctx, ggml_permute(ctx, q, 0, 2, 1, 3));  // [d, T, heads]
    k = ggml_cont(ctx, ggml_permute(ctx, k, 0, 2, 1, 3));  // [d, T, kv]
    // [T, d, kv]: values with the key axis innermost for the product with the weights.
    v = ggml_cont(ctx, ggml_permute(ctx, ggml_reshape_3d(ctx, v, d, cfg.kv_heads, t), 1, 2, 0, 3));
    // Query head i reads key/value head i / (heads / kv) (ggml's broadcast on ne[2]).
    ggml_tensor* kq = ggml_mul_mat(ctx, k, q);  // [Tk, Tq, heads]
    ggml_prec_set_acc(kq, GGML_PREC_F32);
    kq = ggml_soft_max_ext(ctx, kq, mask, 1.0f / std::sqrt(static_cast<float>(d)), 0.0f);
    ggml_soft_max_add_sinks(kq, f32(ctx, c.W(p + "sinks", {cfg.heads})));
    ggml_tensor* o = ggml_mul_mat(ctx, v, kq);             // [d, Tq, heads]
    o = ggml_cont(ctx, ggml_permute(ctx, o, 0, 2, 1, 3));  // [d, heads, Tq]
    return ggml_reshape_3d(ctx, o, qw, t, 1);
}

// The mixture of experts on a normed x [hidden, T, 1].
ggml_tensor* moe(nn::Ctx& c, const GptOssConfig& cfg, const std::string& p, ggml_tensor* a) {
    ggml_context* ctx = c.ctx;
    const int64_t h = cfg.hidden, t = a->ne[1], e = cfg.experts, k = cfg.experts_per_token;
    const int64_t inter = cfg.intermediate;
    ggml_tensor* logits = ggml_mul_mat(ctx, c.W(p + "router.weight", {h, e}), a);
    logits = ggml_add(ctx, ggml_reshape_2d(ctx, logits, e, t),
                      f32(ctx, c.W(p + "router.bias", {e})));                      // [E, T]
    ggml_tensor* selected = ggml_argsort_top_k(ctx, logits, static_cast<int>(k));  // [k, T]
    ggml_tensor* w = ggml_get_rows(ctx, ggml_reshape_3d(ctx, logits, 1, e, t), selected);
    w = ggml_soft_max(ctx, ggml_reshape_2d(ctx, w, k, t));
    w = ggml_reshape_3d(ctx, w, 1, k, t);

    ggml_tensor* x = ggml_reshape_3d(ctx, a, h, 1, t);
    ggml_tensor* gate = expert_linear(c, x, p + "experts.gate_proj", h, inter, e, selected);
    ggml_tensor* up = expert_linear(c, x, p + "experts.up_proj", h, inter, e, selected);
    ggml_tensor* act = ggml_swiglu_oai(ctx, gate, up, 1.702f, 7.0f);  // [I, k, T]
    ggml_tensor* y = expert_linear(c, act, p + "experts.down_proj", inter, h, e, selected);
    y = ggml_mul(ctx, y, w);  // [h, k, T]
    ggml_tensor* out = nullptr;
    for (int64_t i = 0; i < k; ++i) {
        ggml_tensor* one = ggml_view_2d(ctx, y, h, t, y->nb[2], i * y->nb[1]);
        out = out ? ggml_add(ctx, out, one) : one;
    }
    if (k == 1) out = ggml_cont(ctx, out);
    return ggml_reshape_3d(ctx, out, h, t, 1);
}

const TensorInfo* find_shape(const TensorIndex& index, const std::string& name, size_t dims) {
    const TensorInfo* t = index.find(name);
    return t && t->shape.size() == dims ? t : nullptr;
}

}  // namespace

bool is_gpt_oss(const TensorIndex& index, const std::string& role_prefix) {
    for (const TensorInfo& t : index.tensors()) {
        if (starts_with(t.name, role_prefix) && (ends_with(t.name, "layers.0.self_attn.sinks") ||
                                                 ends_with(t.name, "layers.0.mlp.router.weight"))) {
            return true;
        }
    }
    return false;
}

Result<GptOssConfig> detect_gpt_oss(const TensorIndex& index, const std::string& role_prefix) {
    GptOssConfig cfg;
    const TensorInfo* emb = nullptr;
    for (const TensorInfo& t : index.tensors()) {
        if (starts_with(t.name, role_prefix) && ends_with(t.name, "embed_tokens.weight") &&
            t.shape.size() == 2) {
            emb = &t;
            cfg.base = t.name.substr(0, t.name.size() - std::string("embed_tokens.weight").size());
            break;
        }
    }
    if (!emb) return Status::Error("missing tensor " + role_prefix + "model.embed_tokens.weight");
    cfg.vocab = emb->shape[0];
    cfg.hidden = emb->shape[1];
    const std::string l0 = cfg.base + "layers.0.";
    if (index.has(l0 + "mlp.experts.gate_up_proj_blocks") ||
        index.has(l0 + "mlp.experts.gate_up_proj")) {
        return Status::Error(
            "GPT-OSS in Hugging Face's original layout (fused, MXFP4-packed experts) is not "
            "supported yet: pass a GGUF of it (e.g. unsloth/gpt-oss-20b-GGUF) with --llm");
    }
    while (
        index.has(cfg.base + "layers." + std::to_string(cfg.layers) + ".self_attn.q_proj.weight")) {
        ++cfg.layers;
    }
    if (cfg.layers == 0) return Status::Error("missing tensor " + l0 + "self_attn.q_proj.weight");
    for (const char* need : {"self_attn.k_proj.weight", "self_attn.sinks", "mlp.router.weight",
                             "mlp.experts.gate_proj.weight", "input_layernorm.weight"}) {
        if (!index.has(l0 + need)) return Status::Error("missing tensor " + l0 + need);
    }
    if (!index.has(l0 + cfg.mlp_norm)) {
        if (!index.has(l0 + "post_attention_norm.weight")) {
            return Status::Error("missing tensor " + l0 + cfg.mlp_norm);
        }
        cfg.mlp_norm = "post_attention_norm.weight";
    }
    const TensorInfo* q = find_shape(index, l0 + "self_attn.q_proj.weight", 2);
    const TensorInfo* k = find_shape(index, l0 + "self_attn.k_proj.weight", 2);
    if (!q || !k || q->shape[1] != cfg.hidden || k->shape[1] != cfg.hidden ||
        q->shape[0] % cfg.head_dim || k->shape[0] % cfg.head_dim) {
        return Status::Error(l0 + "self_attn: q_proj / k_proj are not whole heads of " +
                             std::to_string(cfg.head_dim) + " over " + std::to_string(cfg.hidden) +
                             " features");
    }
    cfg.heads = q->shape[0] / cfg.head_dim;
    cfg.kv_heads = k->shape[0] / cfg.head_dim;
    if (cfg.kv_heads == 0 || cfg.heads % cfg.kv_heads) {
        return Status::Error(l0 + "self_attn: " + std::to_string(cfg.heads) +
                             " query heads cannot share " + std::to_string(cfg.kv_heads) +
                             " key/value heads");
    }
    const TensorInfo* router = find_shape(index, l0 + "mlp.router.weight", 2);
    const TensorInfo* gate = find_shape(index, l0 + "mlp.experts.gate_proj.weight", 3);
    if (!router || router->shape[1] != cfg.hidden) {
        return Status::Error(l0 + "mlp.router.weight is not [experts, " +
                             std::to_string(cfg.hidden) + "]");
    }
    cfg.experts = router->shape[0];
    if (!gate || gate->shape[0] != cfg.experts || gate->shape[2] != cfg.hidden) {
        return Status::Error(l0 + "mlp.experts.gate_proj.weight is not [" +
                             std::to_string(cfg.experts) + ", intermediate, " +
                             std::to_string(cfg.hidden) + "]");
    }
    cfg.intermediate = gate->shape[1];
    if (cfg.experts < cfg.experts_per_token) {
        return Status::Error(l0 + "mlp: " + std::to_string(cfg.experts) +
                             " experts, GPT-OSS routes each token to 4");
    }
    return cfg;
}

Result<HostTensor> gpt_oss_embed(const TensorIndex& index, const GptOssConfig& cfg,
                                 const std::vector<int>& ids) {
    QwenLlmConfig table;  // the same embedding table layout
    table.base = cfg.base;
    table.vocab = cfg.vocab;
    table.hidden = cfg.hidden;
    return qwen_llm_embed(index, table, ids);
}

HostTensor gpt_oss_window_mask(int64_t tokens, int window) {
    HostTensor m({tokens, tokens});
    const float hide = -std::numeric_limits<float>::infinity();
    for (int64_t q = 0; q < tokens; ++q) {
        for (int64_t k = 0; k < tokens; ++k) {
            const bool seen = k <= q && (window <= 0 || k + window > q);
            m.data[q * tokens + k] = seen ? 0.0f : hide;
        }
    }
    return m;
}

HostTensor gpt_oss_causal_mask(int64_t tokens) {
    return gpt_oss_window_mask(tokens, 0);
}

ggml_tensor* build_gpt_oss(nn::Ctx& c, const GptOssConfig& cfg, ggml_tensor* x,
                           ggml_tensor* positions, ggml_tensor* causal, ggml_tensor* window,
                           const std::vector<int>& out_layers) {
    ggml_context* ctx = c.ctx;
    const int64_t h = cfg.hidden, qw = cfg.heads * cfg.head_dim;
    int64_t last = cfg.layers - 1;
    if (!out_layers.empty()) {
        last = std::min<int64_t>(*std::max_element(out_layers.begin(), out_layers.end()), last);
    }
    std::vector<ggml_tensor*> outs(out_layers.size(), nullptr);
    for (int64_t i = 0; i <= last; ++i) {
        const std::string p = cfg.base + "layers." + std::to_string(i) + ".";
        ggml_tensor* mask = (i % 2 == 0 && cfg.sliding_window > 0) ? window : causal;
        ggml_tensor* a = rms(c, x, p + "input_layernorm.weight", h, cfg.eps);
        a = attention(c, cfg, p + "self_attn.", a, positions, mask);
        x = ggml_add(ctx, x, nn::linear(c, a, p + "self_attn.o_proj", qw, h, true));
        a = rms(c, x, p + cfg.mlp_norm, h, cfg.eps);
        x = ggml_add(ctx, x, moe(c, cfg, p + "mlp.", a));
        for (size_t j = 0; j < out_layers.size(); ++j) {
            if (out_layers[j] == i) outs[j] = x;
        }
    }
    if (out_layers.empty()) return rms(c, x, cfg.base + "norm.weight", h, cfg.eps);
    ggml_tensor* y = nullptr;
    for (ggml_tensor* o : outs) {
        if (!o) o = x;
        y = y ? ggml_concat(ctx, y, o, 0) : o;
    }
    return y;
}

}  // namespace ggdiff::models
