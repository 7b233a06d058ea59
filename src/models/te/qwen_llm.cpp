#include "models/te/qwen_llm.h"

#include <ggml.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "io/name_util.h"
#include "io/tensor_convert.h"
#include "nn/dit.h"
#include "nn/layers.h"

namespace ggdiff::models {

namespace {

const TensorInfo* find2d(const TensorIndex& index, const std::string& name) {
    const TensorInfo* t = index.find(name);
    return t && t->shape.size() == 2 ? t : nullptr;
}

ggml_tensor* rms(nn::Ctx& c, ggml_tensor* x, const std::string& name, int64_t dim, float eps) {
    return ggml_mul(c.ctx, ggml_rms_norm(c.ctx, x, eps), c.W(name, {dim}));
}

// detect_qwen_llm(), detect_mistral_llm(): `need_final_norm` says whether "<base>norm.weight"
// must be there.
Result<QwenLlmConfig> detect_llm(const TensorIndex& index, const std::string& role_prefix,
                                 bool need_final_norm) {
    QwenLlmConfig cfg;
    // The embedding table names the base: "model.", "model.language_model.", or none.
    const TensorInfo* emb = nullptr;
    for (const TensorInfo& t : index.tensors()) {
        if (starts_with(t.name, role_prefix) && ends_with(t.name, "embed_tokens.weight") &&
            t.name.find("visual") == std::string::npos && t.shape.size() == 2) {
            emb = &t;
            cfg.base = t.name.substr(0, t.name.size() - std::string("embed_tokens.weight").size());
            break;
        }
    }
    if (!emb) return Status::Error("missing tensor " + role_prefix + "model.embed_tokens.weight");
    cfg.vocab = emb->shape[0];
    cfg.hidden = emb->shape[1];
    const std::string l0 = cfg.base + "layers.0.";
    while (
        index.has(cfg.base + "layers." + std::to_string(cfg.layers) + ".self_attn.q_proj.weight")) {
        ++cfg.layers;
    }
    if (cfg.layers == 0) return Status::Error("missing tensor " + l0 + "self_attn.q_proj.weight");
    const TensorInfo* q = find2d(index, l0 + "self_attn.q_proj.weight");
    const TensorInfo* k = find2d(index, l0 + "self_attn.k_proj.weight");
    const TensorInfo* gate = find2d(index, l0 + "mlp.gate_proj.weight");
    if (!k) return Status::Error("missing tensor " + l0 + "self_attn.k_proj.weight");
    if (!gate) return Status::Error("missing tensor " + l0 + "mlp.gate_proj.weight");
    cfg.qk_norm = index.has(l0 + "self_attn.q_norm.weight");
    cfg.qkv_bias = index.has(l0 + "self_attn.q_proj.bias");
    if (cfg.qk_norm) {
        const TensorInfo* qn = index.find(l0 + "self_attn.q_norm.weight");
        cfg.head_dim = qn->shape.empty() ? 128 : qn->shape.back();
    } else if (q->shape[0] % 128 != 0) {
        cfg.head_dim = 64;
    }
    if (q->shape[0] % cfg.head_dim || k->shape[0] % cfg.head_dim) {
        return Status::Error(l0 + "self_attn: query width " + std::to_string(q->shape[0]) +
                             " and key width " + std::to_string(k->shape[0]) +
                             " are not whole heads of " + std::to_string(cfg.head_dim));
    }
    cfg.heads = q->shape[0] / cfg.head_dim;
    cfg.kv_heads = k->shape[0] / cfg.head_dim;
    if (cfg.kv_heads == 0 || cfg.heads % cfg.kv_heads) {
        return Status::Error(l0 + "self_attn: " + std::to_string(cfg.heads) +
                             " query heads cannot share " + std::to_string(cfg.kv_heads) +
                             " key/value heads");
    }
    cfg.intermediate = gate->shape[0];
    if (need_final_norm && !index.has(cfg.base + "norm.weight")) {
        return Status::Error("missing tensor " + cfg.base + "norm.weight");
    }
    cfg.rope_interleaved = starts_with(q->source_name, "blk.") && !cfg.qkv_bias && !cfg.qk_norm;
    return cfg;
}

}  // namespace

Result<QwenLlmConfig> detect_qwen_llm(const TensorIndex& index, const std::string& role_prefix) {
    return detect_llm(index, role_prefix, /*need_final_norm=*/true);
}

Result<QwenLlmConfig> detect_mistral_llm(const TensorIndex& index, const std::string& role_prefix) {
    auto cfg = detect_llm(index, role_prefix, /*need_final_norm=*/false);
    if (!cfg.ok()) return cfg.status();
    if (cfg->qkv_bias || cfg->qk_norm) {
        return Status::Error(cfg->base + "layers.0.self_attn has " +
                             (cfg->qkv_bias ? "q/k/v biases" : "q/k norms") +
                             ": a Qwen model, not the Mistral text encoder");
    }
    cfg->rope_theta = 1e9f;
    cfg->eps = 1e-5f;
    return cfg;
}

Result<HostTensor> qwen_llm_embed(const TensorIndex& index, const QwenLlmConfig& cfg,
                                  const std::vector<int>& ids) {
    const std::string name = cfg.base + "embed_tokens.weight";
    const TensorInfo* t = index.find(name);
    if (!t) return Status::Error("missing tensor " + name);
    uint64_t row_bytes = 0;
    if (!stored_nbytes(t->dtype, t->ggml_type, {cfg.hidden}, &row_bytes)) {
        return Status::Error(name + ": rows of this type cannot be read one by one");
    }
    TensorInfo row = *t;
    row.shape = {cfg.hidden};
    row.nbytes = row_bytes;
    HostTensor out({cfg.hidden, static_cast<int64_t>(ids.size()), 1});
    const uint8_t* base = index.raw(*t);
    for (size_t i = 0; i < ids.size(); ++i) {
        if (ids[i] < 0 || ids[i] >= cfg.vocab) {
            return Status::Error("token id " + std::to_string(ids[i]) +
                                 " is outside the text encoder's vocabulary of " +
                                 std::to_string(cfg.vocab));
        }
        GGDIFF_TRY(convert_tensor(row, base + row_bytes * static_cast<uint64_t>(ids[i]),
                                  GGML_TYPE_F32, out.data.data() + i * cfg.hidden));
    }
    return out;
}

ggml_tensor* build_qwen_llm(nn::Ctx& c, const QwenLlmConfig& cfg, ggml_tensor* x,
                            ggml_tensor* positions, const std::vector<int>& out_layers,
                            int64_t padding, int64_t bidirectional_from) {
    ggml_context* ctx = c.ctx;
    const int64_t h = cfg.hidden, d = cfg.head_dim, t = x->ne[1], n = x->ne[2];
    const int64_t qw = cfg.heads * d, kw = cfg.kv_heads * d;
    int64_t last = cfg.layers - 1;
    if (!out_layers.empty()) {
        last = std::min<int64_t>(*std::max_element(out_layers.begin(), out_layers.end()), last);
    }
    std::vector<ggml_tensor*> outs(out_layers.size(), nullptr);
    for (int64_t i = 0; i <= last; ++i) {
        const std::string p = cfg.base + "layers." + std::to_string(i) + ".";
        ggml_tensor* a = rms(c, x, p + "input_layernorm.weight", h, cfg.eps);
        ggml_tensor* q = nn::linear(c, a, p + "self_attn.q_proj", h, qw, cfg.qkv_bias);
        ggml_tensor* k = nn::linear(c, a, p + "self_attn.k_proj", h, kw, cfg.qkv_bias);
        ggml_tensor* v = nn::linear(c, a, p + "self_attn.v_proj", h, kw, cfg.qkv_bias);
        q = ggml_reshape_4d(ctx, q, d, cfg.heads, t, n);
        k = ggml_reshape_4d(ctx, k, d, cfg.kv_heads, t, n);
        if (cfg.qk_norm) {
            q = rms(c, q, p + "self_attn.q_norm.weight", d, cfg.eps);
            k = rms(c, k, p + "self_attn.k_norm.weight", d, cfg.eps);
        }
        if (cfg.multimodal_rope()) {
            int sections[4] = {cfg.mrope_sections[0], cfg.mrope_sections[1], cfg.mrope_sections[2],
                               cfg.mrope_sections[3]};
            q = ggml_rope_multi(ctx, q, positions, nullptr, static_cast<int>(d), sections,
                                GGML_ROPE_TYPE_IMROPE, 0, cfg.rope_theta, 1.0f, 0.0f, 1.0f, 0.0f,
                                0.0f);
            k = ggml_rope_multi(ctx, k, positions, nullptr, static_cast<int>(d), sections,
                                GGML_ROPE_TYPE_IMROPE, 0, cfg.rope_theta, 1.0f, 0.0f, 1.0f, 0.0f,
                                0.0f);
        } else {
            const int rope = cfg.rope_interleaved ? GGML_ROPE_TYPE_NORMAL : GGML_ROPE_TYPE_NEOX;
            q = ggml_rope_ext(ctx, q, positions, nullptr, static_cast<int>(d), rope, 0,
                              cfg.rope_theta, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f);
            k = ggml_rope_ext(ctx, k, positions, nullptr, static_cast<int>(d), rope, 0,
                              cfg.rope_theta, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f);
        }
        q = ggml_reshape_3d(ctx, q, qw, t, n);
        k = nn::expand_kv_heads(ctx, ggml_reshape_3d(ctx, k, kw, t, n), d, cfg.kv_heads, cfg.heads);
        v = nn::expand_kv_heads(ctx, v, d, cfg.kv_heads, cfg.heads);
        if (bidirectional_from >= 0 && bidirectional_from < t) {
            // The first tokens attend causally among themselves; the rest see everything.
            const int64_t b = bidirectional_from;
            const int h_ = static_cast<int>(cfg.heads);
            ggml_tensor* rest =
                nn::attention(ctx, nn::token_range(ctx, q, b, t - b), k, v, h_, false);
            a = b == 0 ? rest
                       : ggml_concat(ctx,
                                     nn::attention(ctx, nn::token_range(ctx, q, 0, b),
                                                   nn::token_range(ctx, k, 0, b),
                                                   nn::token_range(ctx, v, 0, b), h_, true),
                                     rest, 1);
        } else if (padding > 0 && padding < t) {
            // The real tokens attend causally among themselves; the padding queries see
            // every real token and no padding key.
            const int64_t real = t - padding;
            ggml_tensor* kr = nn::token_range(ctx, k, 0, real);
            ggml_tensor* vr = nn::token_range(ctx, v, 0, real);
            const int h_ = static_cast<int>(cfg.heads);
            a = ggml_concat(
                ctx, nn::attention(ctx, nn::token_range(ctx, q, 0, real), kr, vr, h_, true),
                nn::attention(ctx, nn::token_range(ctx, q, real, padding), kr, vr, h_, false), 1);
        } else {
            a = nn::attention(ctx, q, k, v, static_cast<int>(cfg.heads), /*causal=*/true);
        }
        x = ggml_add(ctx, x, nn::linear(c, a, p + "self_attn.o_proj", qw, h, false));

        a = rms(c, x, p + "post_attention_layernorm.weight", h, cfg.eps);
        ggml_tensor* g =
            ggml_silu(ctx, nn::linear(c, a, p + "mlp.gate_proj", h, cfg.intermediate, false));
        ggml_tensor* u = nn::linear(c, a, p + "mlp.up_proj", h, cfg.intermediate, false);
        x = ggml_add(
            ctx, x,
            nn::linear(c, ggml_mul(ctx, g, u), p + "mlp.down_proj", cfg.intermediate, h, false));
        for (size_t j = 0; j < out_layers.size(); ++j) {
            if (out_layers[j] == i) outs[j] = x;
        }
    }
    if (out_layers.empty()) return rms(c, x, cfg.base + "norm.weight", h, cfg.eps);
    ggml_tensor* y = nullptr;
    for (ggml_tensor* o : outs) {
        if (!o) o = x;  // a layer past the model's last: its final (un-normed) output
        y = y ? ggml_concat(ctx, y, o, 0) : o;
    }
    return y;
}

}  // namespace ggdiff::models
