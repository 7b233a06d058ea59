#include "models/te/gemma.h"

#include <ggml.h>

#include <cmath>

#include "core/log.h"
#include "io/name_util.h"
#include "models/te/qwen_llm.h"
#include "nn/dit.h"
#include "nn/layers.h"

namespace ggdiff::models {

namespace {

const TensorInfo* find2d(const TensorIndex& index, const std::string& name) {
    const TensorInfo* t = index.find(name);
    return t && t->shape.size() == 2 ? t : nullptr;
}

// Gemma's RMSNorm: x / rms(x) * (1 + weight), or * weight where the file holds 1 + weight.
ggml_tensor* rms1(nn::Ctx& c, const GemmaConfig& cfg, ggml_tensor* x, const std::string& name,
                  int64_t dim) {
    ggml_tensor* n = ggml_rms_norm(c.ctx, x, cfg.eps);
    ggml_tensor* scaled = ggml_mul(c.ctx, n, c.W(name, {dim}));
    return cfg.norm_adds_one ? ggml_add(c.ctx, scaled, n) : scaled;
}

// Attention with the logits capped and the keys limited to a window: q, k, v [heads*d, T, N]
// (k and v already one per query head). Query i sees keys j <= i with i - j < window (window
// 0: all of them), and no padding key (the last `padding` tokens); a padding query sees every
// real key.
ggml_tensor* capped_attention(ggml_context* ctx, ggml_tensor* q, ggml_tensor* k, ggml_tensor* v,
                              int64_t heads, int64_t d, float cap, ggml_tensor* mask) {
    const int64_t t = q->ne[1], n = q->ne[2];
    auto split = [&](ggml_tensor* x) {  // [d, T, heads, N]
        return ggml_cont(ctx,
                         ggml_permute(ctx, ggml_reshape_4d(ctx, x, d, heads, t, n), 0, 2, 1, 3));
    };
    ggml_tensor* kq = ggml_mul_mat(ctx, split(k), split(q));  // [Tk, Tq, heads, N]
    kq = ggml_scale(ctx, kq, 1.0f / std::sqrt(static_cast<float>(d)));
    if (cap > 0.0f) kq = ggml_scale(ctx, ggml_tanh(ctx, ggml_scale(ctx, kq, 1.0f / cap)), cap);
    kq = ggml_soft_max(ctx, ggml_add(ctx, kq, mask));
    // v as [Tk, d, heads, N]: out[d, Tq] = sum over keys.
    ggml_tensor* vt =
        ggml_cont(ctx, ggml_permute(ctx, ggml_reshape_4d(ctx, v, d, heads, t, n), 1, 2, 0, 3));
    ggml_tensor* o = ggml_mul_mat(ctx, vt, kq);  // [d, Tq, heads, N]
    o = ggml_cont(ctx, ggml_permute(ctx, o, 0, 2, 1, 3));
    return ggml_reshape_3d(ctx, o, d * heads, t, n);
}

// The sizes and names common to Gemma 2 and 3; `gen` names the generation in errors.
Result<GemmaConfig> detect_gemma(const TensorIndex& index, const std::string& role_prefix,
                                 const char* gen) {
    GemmaConfig cfg;
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
    while (
        index.has(cfg.base + "layers." + std::to_string(cfg.layers) + ".self_attn.q_proj.weight")) {
        ++cfg.layers;
    }
    const std::string l0 = cfg.base + "layers.0.";
    if (cfg.layers == 0) return Status::Error("missing tensor " + l0 + "self_attn.q_proj.weight");
    const TensorInfo* q = find2d(index, l0 + "self_attn.q_proj.weight");
    const TensorInfo* k = find2d(index, l0 + "self_attn.k_proj.weight");
    const TensorInfo* gate = find2d(index, l0 + "mlp.gate_proj.weight");
    if (!q) return Status::Error(l0 + "self_attn.q_proj.weight is not a matrix");
    if (!k) return Status::Error("missing tensor " + l0 + "self_attn.k_proj.weight");
    if (!gate) return Status::Error("missing tensor " + l0 + "mlp.gate_proj.weight");
    for (const char* norm :
         {"pre_feedforward_layernorm.weight", "post_feedforward_layernorm.weight",
          "post_attention_layernorm.weight", "input_layernorm.weight"}) {
        if (!index.has(l0 + norm)) {
            return Status::Error("missing tensor " + l0 + norm + " (a " + gen +
                                 " layer has norms before and after attention and the MLP; "
                                 "this is not a " +
                                 gen + " model)");
        }
    }
    if (!index.has(cfg.base + "norm.weight")) {
        return Status::Error("missing tensor " + cfg.base + "norm.weight");
    }
    if (q->shape[1] != cfg.hidden || k->shape[1] != cfg.hidden || q->shape[0] % cfg.head_dim ||
        k->shape[0] % cfg.head_dim) {
        return Status::Error(string_format(
            "%sself_attn: query width %lld and key width %lld for a model %lld wide are not whole "
            "heads of %lld (%s: heads of 256)",
            l0.c_str(), (long long)q->shape[0], (long long)k->shape[0], (long long)cfg.hidden,
            (long long)cfg.head_dim, gen));
    }
    cfg.heads = q->shape[0] / cfg.head_dim;
    cfg.kv_heads = k->shape[0] / cfg.head_dim;
    if (cfg.kv_heads == 0 || cfg.heads % cfg.kv_heads) {
        return Status::Error(l0 + "self_attn: " + std::to_string(cfg.heads) +
                             " query heads cannot share " + std::to_string(cfg.kv_heads) +
                             " key/value heads");
    }
    cfg.intermediate = gate->shape[0];
    // llama.cpp's conversion adds Gemma's 1 to every norm weight it stores.
    cfg.norm_adds_one = !starts_with(emb->source_name, "token_embd.");
    return cfg;
}

}  // namespace

Result<GemmaConfig> detect_gemma2(const TensorIndex& index, const std::string& role_prefix) {
    return detect_gemma(index, role_prefix, "Gemma 2");
}

Result<GemmaConfig> detect_gemma3(const TensorIndex& index, const std::string& role_prefix) {
    auto cfg = detect_gemma(index, role_prefix, "Gemma 3");
    if (!cfg.ok()) return cfg;
    const std::string l0 = cfg->base + "layers.0.";
    for (const char* norm : {"self_attn.q_norm.weight", "self_attn.k_norm.weight"}) {
        const TensorInfo* t = index.find(l0 + norm);
        if (!t) {
            return Status::Error("missing tensor " + l0 + norm +
                                 " (Gemma 3 normalizes each query and key head; a model "
                                 "without it is not Gemma 3)");
        }
        if (t->shape.size() != 1 || t->shape[0] != cfg->head_dim) {
            return Status::Error(l0 + norm + " is not " + std::to_string(cfg->head_dim) +
                                 " wide (Gemma 3's heads are 256 wide)");
        }
    }
    cfg->qk_norm = true;
    cfg->rope_theta = 1000000.0f;
    cfg->rope_scale = 8.0f;
    cfg->rope_theta_local = 10000.0f;
    cfg->sliding_window = 1024;
    cfg->sliding_period = 6;
    return cfg;
}

Result<HostTensor> gemma_embed(const TensorIndex& index, const GemmaConfig& cfg,
                               const std::vector<int>& ids) {
    // The rows are read as the Qwen encoders read theirs; only the names and sizes matter.
    QwenLlmConfig rows;
    rows.base = cfg.base;
    rows.vocab = cfg.vocab;
    rows.hidden = cfg.hidden;
    auto out = qwen_llm_embed(index, rows, ids);
    if (!out.ok()) return out.status();
    const float s = std::sqrt(static_cast<float>(cfg.hidden));
    for (float& v : out->data) v *= s;
    return out;
}

HostTensor gemma_attention_mask(int64_t tokens, int64_t padding, int64_t window) {
    const int64_t t = tokens, real = padding > 0 && padding < t ? t - padding : t;
    HostTensor m({t, t});
    for (int64_t i = 0; i < t; ++i) {
        for (int64_t j = 0; j < t; ++j) {
            bool see = j < real && (i >= real || j <= i);
            if (window > 0 && i < real && i - j >= window) see = false;
            m.data[static_cast<size_t>(i * t + j)] = see ? 0.0f : -INFINITY;
        }
    }
    return m;
}

ggml_tensor* build_gemma(nn::Ctx& c, const GemmaConfig& cfg, ggml_tensor* x, ggml_tensor* positions,
                         int64_t padding, const GemmaMasks& masks,
                         std::vector<ggml_tensor*>* states) {
    ggml_context* ctx = c.ctx;
    const int64_t h = cfg.hidden, d = cfg.head_dim, t = x->ne[1], n = x->ne[2];
    const int64_t qw = cfg.heads * d, kw = cfg.kv_heads * d;
    const int heads = static_cast<int>(cfg.heads);
    const bool manual = cfg.needs_masks(t);
    ggml_tensor* global_mask = manual ? masks.global : nullptr;
    ggml_tensor* window_mask = manual ? masks.window : nullptr;
    if (states) states->push_back(x);
    for (int64_t i = 0; i < cfg.layers; ++i) {
        const std::string p = cfg.base + "layers." + std::to_string(i) + ".";
        if (states && i > 0) states->push_back(x);
        const bool local = cfg.sliding(i);
        const float theta =
            local && cfg.rope_theta_local > 0.0f ? cfg.rope_theta_local : cfg.rope_theta;
        const float freq_scale = local ? 1.0f : 1.0f / cfg.rope_scale;
        ggml_tensor* a = rms1(c, cfg, x, p + "input_layernorm.weight", h);
        ggml_tensor* q = nn::linear(c, a, p + "self_attn.q_proj", h, qw, false);
        ggml_tensor* k = nn::linear(c, a, p + "self_attn.k_proj", h, kw, false);
        ggml_tensor* v = nn::linear(c, a, p + "self_attn.v_proj", h, kw, false);
        q = ggml_reshape_4d(ctx, q, d, cfg.heads, t, n);
        k = ggml_reshape_4d(ctx, k, d, cfg.kv_heads, t, n);
        if (cfg.qk_norm) {
            q = rms1(c, cfg, q, p + "self_attn.q_norm.weight", d);
            k = rms1(c, cfg, k, p + "self_attn.k_norm.weight", d);
        }
        q = ggml_rope_ext(ctx, q, positions, nullptr, static_cast<int>(d), GGML_ROPE_TYPE_NEOX, 0,
                          theta, freq_scale, 0.0f, 1.0f, 0.0f, 0.0f);
        k = ggml_rope_ext(ctx, k, positions, nullptr, static_cast<int>(d), GGML_ROPE_TYPE_NEOX, 0,
                          theta, freq_scale, 0.0f, 1.0f, 0.0f, 0.0f);
        q = ggml_reshape_3d(ctx, q, qw, t, n);
        k = nn::expand_kv_heads(ctx, ggml_reshape_3d(ctx, k, kw, t, n), d, cfg.kv_heads, cfg.heads);
        v = nn::expand_kv_heads(ctx, v, d, cfg.kv_heads, cfg.heads);
        if (manual) {
            a = capped_attention(ctx, q, k, v, cfg.heads, d, cfg.attn_soft_cap,
                                 local ? window_mask : global_mask);
        } else if (padding > 0 && padding < t) {
            // The real tokens attend causally among themselves; the padding queries see
            // every real token and no padding key.
            const int64_t real = t - padding;
            ggml_tensor* kr = nn::token_range(ctx, k, 0, real);
            ggml_tensor* vr = nn::token_range(ctx, v, 0, real);
            a = ggml_concat(
                ctx,
                nn::attention(ctx, nn::token_range(ctx, q, 0, real), kr, vr, heads, true, nullptr,
                              cfg.ggml_attention),
                nn::attention(ctx, nn::token_range(ctx, q, real, padding), kr, vr, heads, false),
                1);
        } else {
            a = nn::attention(ctx, q, k, v, heads, /*causal=*/true, nullptr, cfg.ggml_attention);
        }
        a = nn::linear(c, a, p + "self_attn.o_proj", qw, h, false);
        x = ggml_add(ctx, x, rms1(c, cfg, a, p + "post_attention_layernorm.weight", h));

        a = rms1(c, cfg, x, p + "pre_feedforward_layernorm.weight", h);
        ggml_tensor* g =
            ggml_gelu(ctx, nn::linear(c, a, p + "mlp.gate_proj", h, cfg.intermediate, false));
        ggml_tensor* u = nn::linear(c, a, p + "mlp.up_proj", h, cfg.intermediate, false);
        a = nn::linear(c, ggml_mul(ctx, g, u), p + "mlp.down_proj", cfg.intermediate, h, false);
        x = ggml_add(ctx, x, rms1(c, cfg, a, p + "post_feedforward_layernorm.weight", h));
    }
    ggml_tensor* out = rms1(c, cfg, x, cfg.base + "norm.weight", h);
    if (states) states->push_back(out);
    return out;
}

}  // namespace ggdiff::models
