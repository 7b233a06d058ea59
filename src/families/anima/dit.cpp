#include "families/anima/dit.h"

#include <ggml.h>

#include <cmath>
#include <utility>

#include "io/tensor_probe.h"
#include "nn/dit.h"
#include "nn/layers.h"

namespace ggdiff::models {

namespace {

// Per-head RMSNorm of x [heads*d, T, N] by the weight `name` [d].
ggml_tensor* head_rms(nn::Ctx& c, ggml_tensor* x, const std::string& name, int64_t d) {
    const int64_t dim = x->ne[0], t = x->ne[1], n = x->ne[2];
    x = ggml_rms_norm(c.ctx, ggml_reshape_4d(c.ctx, ggml_cont(c.ctx, x), d, dim / d, t, n), 1e-6f);
    return ggml_reshape_3d(c.ctx, ggml_mul(c.ctx, x, c.W(name, {d})), dim, t, n);
}

// Attention with q/k/v projections (no biases) and per-head q/k RMSNorm; RoPE on q and k
// where their angles are given. x [in, Tq, N], ctx_in [ctx_width, Tk, N] (x itself: self).
struct AttnShape {
    int64_t in, ctx_width, heads, d;
    const char* out;  // "output_proj" (DiT) or "o_proj" (adapter)
};
ggml_tensor* attention(nn::Ctx& c, const std::string& p, const AttnShape& s, ggml_tensor* x,
                       ggml_tensor* ctx_in, ggml_tensor* q_cos, ggml_tensor* q_sin,
                       ggml_tensor* k_cos, ggml_tensor* k_sin) {
    const int64_t inner = s.heads * s.d;
    ggml_tensor* q = nn::linear(c, x, p + "q_proj", s.in, inner, false);
    ggml_tensor* k = nn::linear(c, ctx_in, p + "k_proj", s.ctx_width, inner, false);
    ggml_tensor* v = nn::linear(c, ctx_in, p + "v_proj", s.ctx_width, inner, false);
    q = head_rms(c, q, p + "q_norm.weight", s.d);
    k = head_rms(c, k, p + "k_norm.weight", s.d);
    if (q_cos) q = nn::rope_halves(c.ctx, q, q_cos, q_sin, static_cast<int>(s.heads));
    if (k_cos) k = nn::rope_halves(c.ctx, k, k_cos, k_sin, static_cast<int>(s.heads));
    ggml_tensor* o = nn::attention(c.ctx, q, k, v, static_cast<int>(s.heads));
    return nn::linear(c, o, p + s.out, inner, s.in, false);
}

ggml_tensor* rms(nn::Ctx& c, ggml_tensor* x, const std::string& name, int64_t dim) {
    return nn::rms_norm(c, x, name, dim, 1e-6f);
}

// Chunk i of `count` [dim] chunks of m [count*dim, N], as [dim, 1, N].
ggml_tensor* chunk(ggml_context* ctx, ggml_tensor* m, int64_t dim, int i) {
    const int64_t n = m->ne[1];
    return ggml_cont(ctx, ggml_view_3d(ctx, m, dim, 1, n, m->nb[1], m->nb[1],
                                       static_cast<size_t>(i) * dim * ggml_element_size(m)));
}

// AdaLN-LoRA: linear_2(linear_1(SiLU(t_norm))) + temb (its first `chunks` x width rows).
ggml_tensor* adaln(nn::Ctx& c, const AnimaConfig& cfg, const std::string& p, ggml_tensor* t_norm,
                   ggml_tensor* temb, int chunks) {
    ggml_tensor* m =
        nn::linear(c, ggml_silu(c.ctx, t_norm), p + "1", cfg.width, cfg.adaln_lora, false);
    m = nn::linear(c, m, p + "2", cfg.adaln_lora, chunks * cfg.width, false);
    ggml_tensor* t = temb;
    if (chunks * cfg.width != temb->ne[0]) {
        t = ggml_cont(c.ctx,
                      ggml_view_2d(c.ctx, temb, chunks * cfg.width, temb->ne[1], temb->nb[1], 0));
    }
    return ggml_add(c.ctx, m, t);
}

// Latent tokens [C*4, w*h, N] with features (row in patch, column in patch, channel), the
// channel fastest -> latent [2w, 2h, C, N].
ggml_tensor* unpatchify_channel_last(ggml_context* ctx, ggml_tensor* x, int64_t w, int64_t h) {
    const int64_t C = x->ne[0] / 4, N = x->ne[2];
    x = ggml_reshape_4d(ctx, x, C, 4, w * h, N);
    x = ggml_cont(ctx, ggml_permute(ctx, x, 2, 0, 1, 3));  // [4, w*h, C, N]
    x = ggml_reshape_4d(ctx, x, 2, 2, w, h * C * N);       // [px, py, w, rest]
    x = ggml_cont(ctx, ggml_permute(ctx, x, 0, 2, 1, 3));  // [px, w, py, rest]
    return ggml_reshape_4d(ctx, x, 2 * w, 2 * h, C, N);
}

void fill_angles(AnimaRope& r, int64_t token, int64_t pairs, int64_t first, float pos, int dim,
                 float theta) {
    for (int j = 0; j < dim / 2; ++j) {
        const float omega = 1.0f / std::pow(theta, 2.0f * static_cast<float>(j) / dim);
        const size_t i = static_cast<size_t>(token * pairs + first + j);
        r.cos.data[i] = std::cos(pos * omega);
        r.sin.data[i] = std::sin(pos * omega);
    }
}

}  // namespace

bool is_anima(const TensorIndex& index, const std::string& prefix) {
    return index.has(prefix + "llm_adapter.blocks.0.cross_attn.q_proj.weight");
}

Result<AnimaConfig> detect_anima(const TensorIndex& index, const std::string& prefix) {
    AnimaConfig cfg;
    cfg.prefix = prefix;
    const TensorProbe p{index, prefix, "Anima"};
    std::vector<int64_t> x_emb, final_lin, ck, l1, ada1, emb, aq, ak;
    for (auto [name, out] : {std::pair{"x_embedder.proj.1.weight", &x_emb},
                             {"final_layer.linear.weight", &final_lin},
                             {"blocks.0.cross_attn.k_proj.weight", &ck},
                             {"blocks.0.mlp.layer1.weight", &l1},
                             {"blocks.0.adaln_modulation_self_attn.1.weight", &ada1},
                             {"llm_adapter.embed.weight", &emb},
                             {"llm_adapter.blocks.0.cross_attn.q_proj.weight", &aq},
                             {"llm_adapter.blocks.0.cross_attn.k_proj.weight", &ak}}) {
        auto shape = p.shape(name, 2);
        if (!shape.ok()) return shape.status();
        *out = *shape;
    }
    cfg.width = x_emb[0];
    const int64_t pp = static_cast<int64_t>(cfg.patch) * cfg.patch;
    if (final_lin[1] != cfg.width || final_lin[0] % pp ||
        x_emb[1] != (final_lin[0] / pp + 1) * pp) {
        return Status::Error(prefix + "x_embedder.proj.1.weight / final_layer.linear.weight: " +
                             std::to_string(x_emb[1]) + " in and " + std::to_string(final_lin[0]) +
                             " out features are not 2x2 patches of a latent (plus its mask)");
    }
    cfg.latent_channels = final_lin[0] / pp;
    auto qn = p.shape("blocks.0.self_attn.q_norm.weight", 1);
    if (!qn.ok()) return qn.status();
    if (cfg.width % (*qn)[0]) {
        return p.odd("blocks.0.self_attn.q_norm.weight", "does not divide the width");
    }
    cfg.head_dim = (*qn)[0];
    cfg.heads = cfg.width / cfg.head_dim;
    int sum = 0;
    for (int a : cfg.axes_dim) sum += a;
    if (cfg.head_dim != sum) {
        return p.odd("blocks.0.self_attn.q_norm.weight",
                     "heads of " + std::to_string(cfg.head_dim) + " (the 3-axis RoPE covers " +
                         std::to_string(sum) + ")");
    }
    cfg.text_width = ck[1];
    cfg.mlp = l1[0];
    cfg.adaln_lora = ada1[0];
    cfg.layers = p.count("blocks.", "self_attn.q_proj.weight");
    cfg.adapter_vocab = emb[0];
    cfg.adapter_width = emb[1];
    cfg.adapter_source = ak[1];
    if (aq[0] != cfg.adapter_width || aq[1] != cfg.adapter_width) {
        return p.odd(
            "llm_adapter.blocks.0.cross_attn.q_proj.weight",
            "not " + std::to_string(cfg.adapter_width) + " x " + std::to_string(cfg.adapter_width));
    }
    auto an = p.shape("llm_adapter.blocks.0.self_attn.q_norm.weight", 1);
    if (!an.ok()) return an.status();
    if (cfg.adapter_width % (*an)[0]) {
        return p.odd("llm_adapter.blocks.0.self_attn.q_norm.weight",
                     "does not divide the adapter's width");
    }
    cfg.adapter_head_dim = (*an)[0];
    cfg.adapter_heads = cfg.adapter_width / cfg.adapter_head_dim;
    cfg.adapter_layers = p.count("llm_adapter.blocks.", "self_attn.q_proj.weight");
    if (cfg.adapter_width != cfg.text_width) {
        return Status::Error(prefix + "llm_adapter: gives " + std::to_string(cfg.adapter_width) +
                             " wide features, the blocks' cross attention reads " +
                             std::to_string(cfg.text_width));
    }
    if (cfg.layers == 0) return p.missing("blocks.0.self_attn.q_proj.weight");
    return cfg;
}

AnimaRope anima_image_rope(const AnimaConfig& cfg, int64_t latent_w, int64_t latent_h) {
    const int64_t gw = (latent_w + cfg.patch - 1) / cfg.patch;
    const int64_t gh = (latent_h + cfg.patch - 1) / cfg.patch;
    const int64_t pairs = cfg.head_dim / 2, tokens = gw * gh;
    AnimaRope r{HostTensor({pairs, 1, tokens, 1}), HostTensor({pairs, 1, tokens, 1})};
    auto ntk = [&](int dim) {
        return cfg.spatial_ntk == 1.0f || dim <= 2
                   ? 1.0f
                   : std::pow(cfg.spatial_ntk, static_cast<float>(dim) / (dim - 2));
    };
    const int dt = cfg.axes_dim[0], dh = cfg.axes_dim[1], dw = cfg.axes_dim[2];
    for (int64_t y = 0; y < gh; ++y) {
        for (int64_t x = 0; x < gw; ++x) {
            const int64_t t = y * gw + x;
            fill_angles(r, t, pairs, 0, 0.0f, dt, cfg.theta);
            fill_angles(r, t, pairs, dt / 2, static_cast<float>(y), dh, cfg.theta * ntk(dh));
            fill_angles(r, t, pairs, (dt + dh) / 2, static_cast<float>(x), dw, cfg.theta * ntk(dw));
        }
    }
    return r;
}

AnimaRope anima_adapter_rope(const AnimaConfig& cfg, int64_t tokens) {
    const int64_t pairs = cfg.adapter_head_dim / 2;
    AnimaRope r{HostTensor({pairs, 1, tokens, 1}), HostTensor({pairs, 1, tokens, 1})};
    for (int64_t t = 0; t < tokens; ++t) {
        fill_angles(r, t, pairs, 0, static_cast<float>(t), static_cast<int>(cfg.adapter_head_dim),
                    10000.0f);
    }
    return r;
}

ggml_tensor* build_anima_adapter(nn::Ctx& c, const AnimaConfig& cfg, ggml_tensor* t5_ids,
                                 ggml_tensor* qwen, ggml_tensor* target_cos,
                                 ggml_tensor* target_sin, ggml_tensor* source_cos,
                                 ggml_tensor* source_sin) {
    ggml_context* ctx = c.ctx;
    const std::string p = cfg.prefix + "llm_adapter.";
    const int64_t w = cfg.adapter_width;
    ggml_tensor* table = c.W(p + "embed.weight", {w, cfg.adapter_vocab});
    ggml_tensor* x = ggml_get_rows(ctx, table, t5_ids);  // [w, T]
    if (x->type != GGML_TYPE_F32) x = ggml_cast(ctx, x, GGML_TYPE_F32);
    x = ggml_reshape_3d(ctx, x, w, x->ne[1], 1);
    const AttnShape self{w, w, cfg.adapter_heads, cfg.adapter_head_dim, "o_proj"};
    const AttnShape cross{w, cfg.adapter_source, cfg.adapter_heads, cfg.adapter_head_dim, "o_proj"};
    for (int64_t i = 0; i < cfg.adapter_layers; ++i) {
        const std::string b = p + "blocks." + std::to_string(i) + ".";
        ggml_tensor* h = rms(c, x, b + "norm_self_attn.weight", w);
        x = ggml_add(ctx, x,
                     attention(c, b + "self_attn.", self, h, h, target_cos, target_sin, target_cos,
                               target_sin));
        h = rms(c, x, b + "norm_cross_attn.weight", w);
        x = ggml_add(ctx, x,
                     attention(c, b + "cross_attn.", cross, h, qwen, target_cos, target_sin,
                               source_cos, source_sin));
        h = rms(c, x, b + "norm_mlp.weight", w);
        h = ggml_gelu(ctx, nn::linear(c, h, b + "mlp.0", w, 4 * w, true));
        x = ggml_add(ctx, x, nn::linear(c, h, b + "mlp.2", 4 * w, w, true));
    }
    x = nn::linear(c, x, p + "out_proj", w, w, true);
    return rms(c, x, p + "norm.weight", w);
}

ggml_tensor* build_anima_block(nn::Ctx& c, const AnimaConfig& cfg, int64_t index, ggml_tensor* x,
                               ggml_tensor* context, ggml_tensor* t_norm, ggml_tensor* temb,
                               ggml_tensor* cos, ggml_tensor* sin) {
    ggml_context* ctx = c.ctx;
    const std::string b = cfg.prefix + "blocks." + std::to_string(index) + ".";
    const int64_t w = cfg.width;
    const AttnShape self{w, w, cfg.heads, cfg.head_dim, "output_proj"};
    const AttnShape cross{w, cfg.text_width, cfg.heads, cfg.head_dim, "output_proj"};
    for (const char* stream : {"self_attn", "cross_attn", "mlp"}) {
        ggml_tensor* m =
            adaln(c, cfg, b + "adaln_modulation_" + std::string(stream) + ".", t_norm, temb, 3);
        ggml_tensor* h = nn::modulate(ctx, nn::layer_norm_plain(ctx, x, 1e-6f), chunk(ctx, m, w, 0),
                                      chunk(ctx, m, w, 1));
        const std::string s = stream;
        if (s == "self_attn") {
            h = attention(c, b + "self_attn.", self, h, h, cos, sin, cos, sin);
        } else if (s == "cross_attn") {
            h = attention(c, b + "cross_attn.", cross, h, context, nullptr, nullptr, nullptr,
                          nullptr);
        } else {
            h = ggml_gelu(ctx, nn::linear(c, h, b + "mlp.layer1", w, cfg.mlp, false));
            h = nn::linear(c, h, b + "mlp.layer2", cfg.mlp, w, false);
        }
        x = ggml_add(ctx, x, ggml_mul(ctx, h, chunk(ctx, m, w, 2)));
    }
    return x;
}

ggml_tensor* build_anima(nn::Ctx& c, const AnimaConfig& cfg, ggml_tensor* x, ggml_tensor* sigmas,
                         ggml_tensor* context, ggml_tensor* cos, ggml_tensor* sin) {
    ggml_context* ctx = c.ctx;
    const std::string& p = cfg.prefix;
    const int64_t W = x->ne[0], H = x->ne[1], w = cfg.width;
    const int64_t gw = (W + cfg.patch - 1) / cfg.patch, gh = (H + cfg.patch - 1) / cfg.patch;

    // The zero "padding mask" channel, then zero padding to whole patches.
    x = ggml_pad(ctx, x, static_cast<int>(gw * cfg.patch - W), static_cast<int>(gh * cfg.patch - H),
                 1, 0);
    ggml_tensor* img = nn::patchify(ctx, x, cfg.patch);  // [(C+1)*4, gw*gh, N]
    img = nn::linear(c, img, p + "x_embedder.proj.1", img->ne[0], w, false);

    ggml_tensor* t = ggml_timestep_embedding(ctx, sigmas, static_cast<int>(w), 10000);
    ggml_tensor* temb = nn::linear(c, t, p + "t_embedder.1.linear_1", w, w, false);
    temb = nn::linear(c, ggml_silu(ctx, temb), p + "t_embedder.1.linear_2", w, 3 * w, false);
    ggml_tensor* t_norm = rms(c, t, p + "t_embedding_norm.weight", w);

    for (int64_t i = 0; i < cfg.layers; ++i) {
        img = build_anima_block(c, cfg, i, img, context, t_norm, temb, cos, sin);
    }

    ggml_tensor* m = adaln(c, cfg, p + "final_layer.adaln_modulation.", t_norm, temb, 2);
    img = nn::modulate(ctx, nn::layer_norm_plain(ctx, img, 1e-6f), chunk(ctx, m, w, 0),
                       chunk(ctx, m, w, 1));
    img = nn::linear(c, img, p + "final_layer.linear", w, 4 * cfg.latent_channels, false);
    return nn::crop_latent(ctx, unpatchify_channel_last(ctx, img, gw, gh), W, H);
}

}  // namespace ggdiff::models
