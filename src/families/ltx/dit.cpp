#include "families/ltx/dit.h"

#include <ggml.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "core/log.h"
#include "nn/dit.h"
#include "nn/layers.h"

namespace ggdiff::models {

namespace {

constexpr double kHalfPi = 1.5707963267948966;

const TensorInfo* matrix(const TensorIndex& index, const std::string& name) {
    const TensorInfo* t = index.find(name);
    return t && t->shape.size() == 2 ? t : nullptr;
}

int64_t count_blocks(const TensorIndex& index, const std::string& prefix,
                     const std::string& probe) {
    int64_t n = 0;
    while (index.has(prefix + std::to_string(n) + "." + probe)) ++n;
    return n;
}

// The reference's head layout: the gate's bias length when there is one, else the first of
// head sizes 128, 96, 80, 64, 48, 40, 32 giving 8..64 heads, else 32 heads.
std::pair<int64_t, int64_t> head_layout(const TensorIndex& index, const std::string& gate_bias,
                                        int64_t dim) {
    int64_t preferred = 32;
    if (const TensorInfo* g = index.find(gate_bias); g && g->shape.size() == 1) {
        preferred = g->shape[0];
    }
    if (preferred > 0 && dim % preferred == 0) return {preferred, dim / preferred};
    for (int64_t d : {128, 96, 80, 64, 48, 40, 32}) {
        if (dim % d == 0 && dim / d >= 8 && dim / d <= 64) return {dim / d, d};
    }
    return {32, dim / 32};
}

Result<LtxConnectorConfig> detect_connector(const TensorIndex& index, const std::string& p) {
    LtxConnectorConfig cc;
    const TensorInfo* q = matrix(index, p + "transformer_1d_blocks.0.attn1.to_q.weight");
    if (!q) return cc;
    cc.present = true;
    cc.hidden = q->shape[0];
    std::tie(cc.heads, cc.head_dim) =
        head_layout(index, p + "transformer_1d_blocks.0.attn1.to_gate_logits.bias", cc.hidden);
    cc.layers = count_blocks(index, p + "transformer_1d_blocks.", "attn1.to_q.weight");
    cc.gated = index.has(p + "transformer_1d_blocks.0.attn1.to_gate_logits.weight");
    cc.registers = 128;
    if (const TensorInfo* r = index.find(p + "learnable_registers")) {
        if (r->shape.size() != 2 || r->shape[1] != cc.hidden) {
            return Status::Error(p + "learnable_registers is not [registers, " +
                                 std::to_string(cc.hidden) + "]");
        }
        cc.registers = r->shape[0];
    } else {
        return Status::Error("missing tensor " + p + "learnable_registers");
    }
    if (cc.head_dim % 2) {
        return Status::Error(p + ": heads of " + std::to_string(cc.head_dim) +
                             " cannot take RoPE pairs");
    }
    return cc;
}

// ---------------------------------------------------------------------------------------------
// Graph pieces.

// rms(x) without a weight (eps 1e-6), the blocks' norm.
ggml_tensor* rms(ggml_context* ctx, ggml_tensor* x) {
    return ggml_rms_norm(ctx, x, 1e-6f);
}

// A per-sample modulation vector [dim, 1, N] row `row` of `mods` ([rows * dim, 1, N]) plus row
// `row` of `table` ([rows, dim] torch, a [dim, rows] ggml weight).
// A modulation table ([rows, dim] torch) as f32.
ggml_tensor* table_f32(nn::Ctx& c, const std::string& name, int64_t dim, int64_t rows) {
    ggml_tensor* t = c.W(name, {dim, rows});
    return t->type == GGML_TYPE_F32 ? t : ggml_cast(c.ctx, t, GGML_TYPE_F32);
}

ggml_tensor* mod_row(nn::Ctx& c, ggml_tensor* mods, const std::string& table, int64_t rows,
                     int64_t table_row, int64_t mods_row, int64_t dim) {
    ggml_tensor* t = table_f32(c, table, dim, rows);
    ggml_tensor* tr = ggml_view_1d(c.ctx, t, dim, table_row * dim * ggml_element_size(t));
    ggml_tensor* m = ggml_view_3d(c.ctx, mods, dim, mods->ne[1], mods->ne[2], mods->nb[1],
                                  mods->nb[2], mods_row * dim * ggml_element_size(mods));
    return ggml_add(c.ctx, ggml_cont(c.ctx, m), tr);
}

ggml_tensor* gate(ggml_context* ctx, ggml_tensor* x, ggml_tensor* g) {
    return ggml_mul(ctx, x, g);
}

ggml_tensor* feed_forward(nn::Ctx& c, ggml_tensor* x, const std::string& p, int64_t dim) {
    ggml_tensor* h = ggml_gelu(c.ctx, nn::linear(c, x, p + "net.0.proj", dim, 4 * dim));
    return nn::linear(c, h, p + "net.2", 4 * dim, dim);
}

struct Rope {
    ggml_tensor *cos = nullptr, *sin = nullptr;
};

// The reference's CrossAttention: x [qdim, T, N] against context [cdim, Tk, N] (x itself when
// null); RoPE on q with `pe` and on k with `kpe` (pe when null) when given.
ggml_tensor* attention(nn::Ctx& c, const std::string& p, ggml_tensor* x, ggml_tensor* context,
                       int64_t qdim, int64_t cdim, int64_t heads, int64_t head_dim, bool gated,
                       Rope pe = {}, Rope kpe = {}) {
    if (!context) context = x;
    const int64_t inner = heads * head_dim;
    ggml_tensor* q = nn::linear(c, x, p + "to_q", qdim, inner);
    ggml_tensor* k = nn::linear(c, context, p + "to_k", cdim, inner);
    ggml_tensor* v = nn::linear(c, context, p + "to_v", cdim, inner);
    q = nn::rms_norm(c, q, p + "q_norm.weight", inner, 1e-5f);
    k = nn::rms_norm(c, k, p + "k_norm.weight", inner, 1e-5f);
    if (pe.cos) {
        if (!kpe.cos) kpe = pe;
        q = nn::rope_halves(c.ctx, q, pe.cos, pe.sin, static_cast<int>(heads));
        k = nn::rope_halves(c.ctx, k, kpe.cos, kpe.sin, static_cast<int>(heads));
    }
    ggml_tensor* o = nn::attention(c.ctx, q, k, v, static_cast<int>(heads));
    if (gated) {
        ggml_tensor* g = nn::linear(c, x, p + "to_gate_logits", qdim, heads);  // [heads, T, N]
        g = ggml_scale(c.ctx, ggml_sigmoid(c.ctx, g), 2.0f);
        g = ggml_reshape_4d(c.ctx, g, 1, heads, g->ne[1], g->ne[2]);
        ggml_tensor* o4 = ggml_reshape_4d(c.ctx, o, head_dim, heads, o->ne[1], o->ne[2]);
        o = ggml_reshape_3d(c.ctx, ggml_mul(c.ctx, o4, g), inner, o->ne[1], o->ne[2]);
    }
    return nn::linear(c, o, p + "to_out.0", inner, qdim);
}

// AdaLayerNormSingle: (linear(silu(emb)), emb) with emb = linear_2(silu(linear_1(sinusoidal(t)))).
// One modulation vector per sample ([rows * dim, 1, N]), or with `per_token` one per token of
// a single sample ([rows * dim, T, 1]: t holds T timesteps).
std::pair<ggml_tensor*, ggml_tensor*> adaln_single(nn::Ctx& c, const std::string& p, ggml_tensor* t,
                                                   int64_t dim, int64_t rows,
                                                   bool per_token = false) {
    ggml_tensor* f = ggml_timestep_embedding(c.ctx, t, 256, 10000);
    ggml_tensor* h = nn::linear(c, f, p + "emb.timestep_embedder.linear_1", 256, dim);
    ggml_tensor* emb =
        nn::linear(c, ggml_silu(c.ctx, h), p + "emb.timestep_embedder.linear_2", dim, dim);
    ggml_tensor* out = nn::linear(c, ggml_silu(c.ctx, emb), p + "linear", dim, rows * dim);
    const int64_t n = t->ne[0];
    if (per_token) {
        return {ggml_reshape_3d(c.ctx, out, rows * dim, n, 1),
                ggml_reshape_3d(c.ctx, emb, dim, n, 1)};
    }
    return {ggml_reshape_3d(c.ctx, out, rows * dim, 1, n), ggml_reshape_3d(c.ctx, emb, dim, 1, n)};
}

// A text context through a connector: registers appended up to its length, the 1-D blocks,
// a final RMSNorm.
ggml_tensor* connector(nn::Ctx& c, const std::string& p, const LtxConnectorConfig& cc,
                       ggml_tensor* x, Rope pe) {
    const int64_t l = x->ne[1], n = x->ne[2];
    const int64_t full = ltx_connector_length(cc, l);
    if (full > l) {
        ggml_tensor* regs = table_f32(c, p + "learnable_registers", cc.hidden, cc.registers);
        ggml_tensor* tiled = regs;
        for (int64_t i = cc.registers; i < full; i += cc.registers)
            tiled = ggml_concat(c.ctx, tiled, regs, 1);
        // Positions l..full-1 of the tiled registers, for every batch item.
        ggml_tensor* tail =
            ggml_view_2d(c.ctx, tiled, cc.hidden, full - l, tiled->nb[1], l * tiled->nb[1]);
        tail = ggml_cont(c.ctx, tail);
        tail = ggml_repeat(c.ctx, ggml_reshape_3d(c.ctx, tail, cc.hidden, full - l, 1),
                           ggml_new_tensor_3d(c.ctx, GGML_TYPE_F32, cc.hidden, full - l, n));
        x = ggml_concat(c.ctx, x, tail, 1);
    }
    for (int64_t i = 0; i < cc.layers; ++i) {
        const std::string b = p + "transformer_1d_blocks." + std::to_string(i) + ".";
        x = ggml_add(c.ctx, x,
                     attention(c, b + "attn1.", rms(c.ctx, x), nullptr, cc.hidden, cc.hidden,
                               cc.heads, cc.head_dim, cc.gated, pe));
        x = ggml_add(c.ctx, x, feed_forward(c, rms(c.ctx, x), b + "ff.", cc.hidden));
    }
    return rms(c.ctx, x);
}

LtxRope rope_tables(const std::vector<std::vector<float>>& angles, int64_t heads) {
    const int64_t tokens = static_cast<int64_t>(angles.size());
    const int64_t half = tokens ? static_cast<int64_t>(angles[0].size()) : 0;
    const int64_t per_head = half / heads;
    LtxRope r{HostTensor({per_head, heads, tokens, 1}), HostTensor({per_head, heads, tokens, 1})};
    for (int64_t t = 0; t < tokens; ++t) {
        for (int64_t i = 0; i < half; ++i) {
            const float a = angles[static_cast<size_t>(t)][static_cast<size_t>(i)];
            r.cos.data[static_cast<size_t>(t * half + i)] = std::cos(a);
            r.sin.data[static_cast<size_t>(t * half + i)] = std::sin(a);
        }
    }
    return r;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

Result<LtxDitConfig> detect_ltx_dit(const TensorIndex& index, const std::string& prefix) {
    LtxDitConfig cfg;
    cfg.prefix = prefix;
    const std::string& p = prefix;
    auto need = [&](const std::string& name) -> Result<const TensorInfo*> {
        const TensorInfo* t = matrix(index, p + name);
        if (!t) return Status::Error("missing tensor " + p + name);
        return t;
    };
    auto patch = need("patchify_proj.weight");
    if (!patch.ok()) return patch.status();
    cfg.in_channels = (*patch)->shape[1];
    cfg.hidden = (*patch)->shape[0];
    std::tie(cfg.heads, cfg.head_dim) =
        head_layout(index, p + "transformer_blocks.0.attn1.to_gate_logits.bias", cfg.hidden);
    auto apatch = need("audio_patchify_proj.weight");
    if (!apatch.ok()) return apatch.status();
    cfg.audio_in = (*apatch)->shape[1];
    cfg.audio_hidden = (*apatch)->shape[0];
    std::tie(cfg.audio_heads, cfg.audio_head_dim) = head_layout(
        index, p + "transformer_blocks.0.audio_attn1.to_gate_logits.bias", cfg.audio_hidden);
    auto out = need("proj_out.weight");
    if (!out.ok()) return out.status();
    cfg.out_channels = (*out)->shape[0];
    auto aout = need("audio_proj_out.weight");
    if (!aout.ok()) return aout.status();
    cfg.audio_out = (*aout)->shape[0];
    auto k2 = need("transformer_blocks.0.attn2.to_k.weight");
    if (!k2.ok()) return k2.status();
    cfg.context = (*k2)->shape[1];
    auto ak2 = need("transformer_blocks.0.audio_attn2.to_k.weight");
    if (!ak2.ok()) return ak2.status();
    cfg.audio_context = (*ak2)->shape[1];
    cfg.layers = count_blocks(index, p + "transformer_blocks.", "attn1.to_q.weight");
    cfg.cross_adaln = index.has(p + "transformer_blocks.0.prompt_scale_shift_table");
    cfg.gated = index.has(p + "transformer_blocks.0.attn1.to_gate_logits.weight");
    if (index.has(p + "caption_projection.linear_1.weight") ||
        index.has(p + "audio_caption_projection.linear_1.weight")) {
        return Status::Error(
            "this LTX DiT has caption projections (LTX-2.0 layout): not supported yet; "
            "LTX-2.3 checkpoints run");
    }
    // Cross-attention AdaLN modulates the text context with the stream's own width, tiled
    // across the context (ggml's broadcast, as the reference; equal widths in real files).
    if (cfg.cross_adaln &&
        (cfg.context % cfg.hidden != 0 || cfg.audio_context % cfg.audio_hidden != 0)) {
        return Status::Error(string_format(
            "%sprompt_scale_shift_table: the %lld / %lld-wide text contexts are not multiples of "
            "the %lld / %lld-wide streams that modulate them",
            p.c_str(), (long long)cfg.context, (long long)cfg.audio_context, (long long)cfg.hidden,
            (long long)cfg.audio_hidden));
    }
    if (cfg.audio_in != cfg.audio_channels * cfg.audio_bins) {
        return Status::Error(string_format(
            "%saudio_patchify_proj takes %lld features; LTX audio latents have 8 x 16", p.c_str(),
            (long long)cfg.audio_in));
    }
    if (cfg.audio_context != cfg.audio_heads * cfg.audio_head_dim) {
        // The reference builds the audio-video RoPE for the audio context width but lays it
        // out by the audio heads; only equal widths are well defined.
        return Status::Error(string_format(
            "%stransformer_blocks.0.audio_attn2 takes a %lld-wide text context, but the audio "
            "stream is %lld wide: not supported",
            p.c_str(), (long long)cfg.audio_context, (long long)cfg.audio_hidden));
    }
    if (cfg.head_dim % 2 || cfg.audio_head_dim % 2) {
        return Status::Error(p + ": attention heads of an odd size cannot take RoPE pairs");
    }
    // Every block's tensors, checked up front so that a truncated file fails before loading.
    for (int64_t i = 0; i < cfg.layers; ++i) {
        const std::string b = "transformer_blocks." + std::to_string(i) + ".";
        for (const char* a : {"attn1.", "attn2.", "audio_attn1.", "audio_attn2.",
                              "audio_to_video_attn.", "video_to_audio_attn."}) {
            for (const char* w : {"to_q.weight", "to_k.weight", "to_v.weight", "to_out.0.weight"}) {
                if (!index.has(p + b + a + w))
                    return Status::Error("missing tensor " + p + b + a + w);
            }
        }
        for (const char* w : {"scale_shift_table", "audio_scale_shift_table",
                              "scale_shift_table_a2v_ca_audio", "scale_shift_table_a2v_ca_video",
                              "ff.net.0.proj.weight", "audio_ff.net.0.proj.weight"}) {
            if (!index.has(p + b + w)) return Status::Error("missing tensor " + p + b + w);
        }
    }
    auto vc = detect_connector(index, p + "video_embeddings_connector.");
    if (!vc.ok()) return vc.status();
    cfg.video_connector = *vc;
    auto ac = detect_connector(index, p + "audio_embeddings_connector.");
    if (!ac.ok()) return ac.status();
    cfg.audio_connector = *ac;
    return cfg;
}

std::vector<float> ltx_video_coords(int64_t w, int64_t h, int64_t frames, float fps,
                                    const LtxKeyframes& keyframes) {
    auto seconds = [&](int64_t corner) {
        return std::max(0.0f, static_cast<float>(corner * 8) + 1.0f - 8.0f) / fps;
    };
    const int64_t first_key = frames - std::clamp<int64_t>(keyframes.count, 0, frames);
    auto centre = [&](int64_t t) {
        if (t < first_key) return 0.5f * (seconds(t) + seconds(t + 1));
        const float start = static_cast<float>(keyframes.pixel + (t - first_key) * 8);
        return 0.5f * (start / fps + (start + 1.0f) / fps);
    };
    std::vector<float> out;
    out.reserve(static_cast<size_t>(3 * w * h * frames));
    for (int64_t t = 0; t < frames; ++t) {
        const float ct = centre(t);
        for (int64_t y = 0; y < h; ++y) {
            for (int64_t x = 0; x < w; ++x) {
                out.push_back(ct / 20.0f);
                out.push_back((static_cast<float>(y * 32) + 16.0f) / 2048.0f);
                out.push_back((static_cast<float>(x * 32) + 16.0f) / 2048.0f);
            }
        }
    }
    return out;
}

std::vector<float> ltx_audio_seconds(int64_t steps) {
    auto start = [](int64_t t) {
        return std::max(0.0f, static_cast<float>(t * 4) + 1.0f - 4.0f) * 160.0f / 16000.0f;
    };
    std::vector<float> out(static_cast<size_t>(steps));
    for (int64_t t = 0; t < steps; ++t)
        out[static_cast<size_t>(t)] = 0.5f * (start(t) + start(t + 1));
    return out;
}

LtxRope ltx_rope(const std::vector<float>& coords, int axes, int64_t dim, int64_t heads,
                 bool double_precision) {
    const int64_t half = dim / 2, count = dim / (2 * axes), pad = half - count * axes;
    std::vector<float> freq(static_cast<size_t>(count));
    std::vector<double> freq_d(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) {
        if (count == 1) {
            freq[0] = static_cast<float>(kHalfPi);
            freq_d[0] = kHalfPi;
            break;
        }
        const float ratio = static_cast<float>(i) / static_cast<float>(count - 1);
        freq[static_cast<size_t>(i)] =
            std::exp(std::log(10000.0f) * ratio) * static_cast<float>(kHalfPi);
        freq_d[static_cast<size_t>(i)] =
            std::exp(std::log(10000.0) *
                     (static_cast<double>(i) / static_cast<double>(count - 1))) *
            kHalfPi;
    }
    const size_t tokens = coords.size() / static_cast<size_t>(axes);
    std::vector<std::vector<float>> angles(tokens,
                                           std::vector<float>(static_cast<size_t>(half), 0.0f));
    for (size_t t = 0; t < tokens; ++t) {
        size_t o = static_cast<size_t>(pad);
        for (int64_t i = 0; i < count; ++i) {
            for (int a = 0; a < axes; ++a) {
                const float c = coords[t * static_cast<size_t>(axes) + static_cast<size_t>(a)];
                angles[t][o++] = double_precision
                                     ? static_cast<float>(freq_d[static_cast<size_t>(i)] *
                                                          (static_cast<double>(c) * 2.0 - 1.0))
                                     : freq[static_cast<size_t>(i)] * (c * 2.0f - 1.0f);
            }
        }
    }
    return rope_tables(angles, heads);
}

LtxRope ltx_video_rope(const LtxDitConfig& cfg, int64_t w, int64_t h, int64_t frames, float fps,
                       const LtxKeyframes& keyframes) {
    return ltx_rope(ltx_video_coords(w, h, frames, fps, keyframes), 3, cfg.hidden, cfg.heads);
}

LtxRope ltx_video_time_rope(const LtxDitConfig& cfg, int64_t w, int64_t h, int64_t frames,
                            float fps, const LtxKeyframes& keyframes) {
    const std::vector<float> xyz = ltx_video_coords(w, h, frames, fps, keyframes);
    std::vector<float> t(xyz.size() / 3);
    for (size_t i = 0; i < t.size(); ++i) t[i] = xyz[3 * i];  // seconds / 20
    return ltx_rope(t, 1, cfg.audio_context, cfg.audio_heads);
}

LtxRope ltx_audio_rope(const LtxDitConfig& cfg, int64_t steps, bool cross) {
    std::vector<float> t = ltx_audio_seconds(steps);
    for (float& v : t) v /= 20.0f;
    return ltx_rope(t, 1, cross ? cfg.audio_context : cfg.audio_hidden, cfg.audio_heads);
}

int64_t ltx_connector_length(const LtxConnectorConfig& cc, int64_t tokens) {
    if (!cc.present || tokens >= 1024) return 0;
    const int64_t dup = (1024 + cc.registers - 1) / cc.registers;
    return std::max(tokens, dup * cc.registers);
}

LtxRope ltx_connector_rope(const LtxConnectorConfig& cc, int64_t tokens) {
    std::vector<float> pos(static_cast<size_t>(tokens));
    for (int64_t i = 0; i < tokens; ++i)
        pos[static_cast<size_t>(i)] = static_cast<float>(i) / 4096.0f;
    return ltx_rope(pos, 1, cc.hidden, cc.heads, true);
}

LtxTimeMods build_ltx_time_mods(nn::Ctx& c, const LtxDitConfig& cfg, ggml_tensor* sigma, bool audio,
                                ggml_tensor* video_sigma) {
    const std::string& p = cfg.prefix;
    LtxTimeMods m;
    ggml_tensor* t = ggml_scale(c.ctx, sigma, 1000.0f);
    if (video_sigma) {
        std::tie(m.video, m.video_embedded) =
            adaln_single(c, p + "adaln_single.", ggml_scale(c.ctx, video_sigma, 1000.0f),
                         cfg.hidden, cfg.coeff(), true);
    } else {
        std::tie(m.video, m.video_embedded) =
            adaln_single(c, p + "adaln_single.", t, cfg.hidden, cfg.coeff());
    }
    if (!audio) return m;
    std::tie(m.audio, m.audio_embedded) =
        adaln_single(c, p + "audio_adaln_single.", t, cfg.audio_hidden, cfg.coeff());
    if (cfg.cross_adaln) {
        m.video_prompt = adaln_single(c, p + "prompt_adaln_single.", t, cfg.hidden, 2).first;
        m.audio_prompt =
            adaln_single(c, p + "audio_prompt_adaln_single.", t, cfg.audio_hidden, 2).first;
    }
    // The reference gives these four the unscaled sigma.
    m.av_video =
        adaln_single(c, p + "av_ca_video_scale_shift_adaln_single.", sigma, cfg.hidden, 4).first;
    m.a2v_gate = adaln_single(c, p + "av_ca_a2v_gate_adaln_single.", sigma, cfg.hidden, 1).first;
    m.av_audio =
        adaln_single(c, p + "av_ca_audio_scale_shift_adaln_single.", sigma, cfg.audio_hidden, 4)
            .first;
    m.v2a_gate =
        adaln_single(c, p + "av_ca_v2a_gate_adaln_single.", sigma, cfg.audio_hidden, 1).first;
    return m;
}

namespace {

// Text cross-attention of one stream: plain on rms(x), or with cross-attention AdaLN the query
// modulated by rows 6 and 7, the text by the prompt table plus prompt mods, gated by row 8.
ggml_tensor* text_attention(nn::Ctx& c, const LtxDitConfig& cfg, const std::string& b,
                            const std::string& attn, const std::string& table,
                            const std::string& prompt_table, ggml_tensor* x, ggml_tensor* context,
                            ggml_tensor* mods, ggml_tensor* prompt_mods, int64_t dim, int64_t cdim,
                            int64_t heads, int64_t head_dim) {
    if (!cfg.cross_adaln) {
        return attention(c, b + attn, rms(c.ctx, x), context, dim, cdim, heads, head_dim,
                         cfg.gated);
    }
    const int64_t rows = cfg.coeff();
    ggml_tensor* q =
        nn::modulate(c.ctx, rms(c.ctx, x), mod_row(c, mods, b + table, rows, 6, 6, dim),
                     mod_row(c, mods, b + table, rows, 7, 7, dim));
    ggml_tensor* ctx = context;
    if (prompt_mods) {
        // At the stream's width, tiled across a wider context by ggml's broadcast.
        ctx = nn::modulate(c.ctx, context, mod_row(c, prompt_mods, b + prompt_table, 2, 0, 0, dim),
                           mod_row(c, prompt_mods, b + prompt_table, 2, 1, 1, dim));
    }
    ggml_tensor* o = attention(c, b + attn, q, ctx, dim, cdim, heads, head_dim, cfg.gated);
    return gate(c.ctx, o, mod_row(c, mods, b + table, rows, 8, 8, dim));
}

}  // namespace

std::pair<ggml_tensor*, ggml_tensor*> build_ltx_block(nn::Ctx& c, const LtxDitConfig& cfg,
                                                      int block, const LtxBlockInputs& in) {
    const std::string b = cfg.prefix + "transformer_blocks." + std::to_string(block) + ".";
    const LtxTimeMods& t = *in.t;
    const int64_t rows = cfg.coeff(), vd = cfg.hidden, ad = cfg.audio_hidden;
    ggml_tensor* vx = in.vx;
    ggml_tensor* ax = in.ax;
    auto vrow = [&](int64_t r) {
        return mod_row(c, t.video, b + "scale_shift_table", rows, r, r, vd);
    };

    ggml_tensor* h = nn::modulate(c.ctx, rms(c.ctx, vx), vrow(0), vrow(1));
    h = attention(c, b + "attn1.", h, nullptr, vd, vd, cfg.heads, cfg.head_dim, cfg.gated,
                  {in.video_cos, in.video_sin});
    vx = ggml_add(c.ctx, vx, gate(c.ctx, h, vrow(2)));
    vx = ggml_add(c.ctx, vx,
                  text_attention(c, cfg, b, "attn2.", "scale_shift_table",
                                 "prompt_scale_shift_table", vx, in.v_context, t.video,
                                 t.video_prompt, vd, cfg.context, cfg.heads, cfg.head_dim));
    if (ax) {
        auto arow = [&](int64_t r) {
            return mod_row(c, t.audio, b + "audio_scale_shift_table", rows, r, r, ad);
        };
        h = nn::modulate(c.ctx, rms(c.ctx, ax), arow(0), arow(1));
        h = attention(c, b + "audio_attn1.", h, nullptr, ad, ad, cfg.audio_heads,
                      cfg.audio_head_dim, cfg.gated, {in.audio_cos, in.audio_sin});
        ax = ggml_add(c.ctx, ax, gate(c.ctx, h, arow(2)));
        ax = ggml_add(c.ctx, ax,
                      text_attention(c, cfg, b, "audio_attn2.", "audio_scale_shift_table",
                                     "audio_prompt_scale_shift_table", ax, in.a_context, t.audio,
                                     t.audio_prompt, ad, cfg.audio_context, cfg.audio_heads,
                                     cfg.audio_head_dim));
        ggml_tensor* vn = rms(c.ctx, vx);
        ggml_tensor* an = rms(c.ctx, ax);
        const std::string vt = b + "scale_shift_table_a2v_ca_video";
        const std::string at = b + "scale_shift_table_a2v_ca_audio";
        auto av = [&](ggml_tensor* mods, const std::string& table, int64_t r, int64_t dim) {
            return mod_row(c, mods, table, 5, r, r, dim);
        };
        // Audio to video: rows 0 (scale) and 1 (shift) of both tables.
        ggml_tensor* vq =
            nn::modulate(c.ctx, vn, av(t.av_video, vt, 1, vd), av(t.av_video, vt, 0, vd));
        ggml_tensor* ak =
            nn::modulate(c.ctx, an, av(t.av_audio, at, 1, ad), av(t.av_audio, at, 0, ad));
        h = attention(c, b + "audio_to_video_attn.", vq, ak, vd, ad, cfg.audio_heads,
                      cfg.audio_head_dim, cfg.gated, {in.vtime_cos, in.vtime_sin},
                      {in.atime_cos, in.atime_sin});
        vx = ggml_add(c.ctx, vx, gate(c.ctx, h, mod_row(c, t.a2v_gate, vt, 5, 4, 0, vd)));
        // Video to audio: rows 2 (scale) and 3 (shift).
        ggml_tensor* aq =
            nn::modulate(c.ctx, an, av(t.av_audio, at, 3, ad), av(t.av_audio, at, 2, ad));
        ggml_tensor* vk =
            nn::modulate(c.ctx, vn, av(t.av_video, vt, 3, vd), av(t.av_video, vt, 2, vd));
        h = attention(c, b + "video_to_audio_attn.", aq, vk, ad, vd, cfg.audio_heads,
                      cfg.audio_head_dim, cfg.gated, {in.atime_cos, in.atime_sin},
                      {in.vtime_cos, in.vtime_sin});
        ax = ggml_add(c.ctx, ax, gate(c.ctx, h, mod_row(c, t.v2a_gate, at, 5, 4, 0, ad)));
        h = nn::modulate(c.ctx, rms(c.ctx, ax), arow(3), arow(4));
        ax = ggml_add(c.ctx, ax, gate(c.ctx, feed_forward(c, h, b + "audio_ff.", ad), arow(5)));
    }
    h = nn::modulate(c.ctx, rms(c.ctx, vx), vrow(3), vrow(4));
    vx = ggml_add(c.ctx, vx, gate(c.ctx, feed_forward(c, h, b + "ff.", vd), vrow(5)));
    return {vx, ax};
}

LtxDitOutputs build_ltx_dit(nn::Ctx& c, const LtxDitConfig& cfg, const LtxDitInputs& in) {
    ggml_context* ctx = c.ctx;
    const std::string& p = cfg.prefix;
    const int64_t w = in.video->ne[0], h = in.video->ne[1], f = in.video->ne[2];
    const int64_t n = in.video->ne[3] / cfg.in_channels;
    // Video tokens [C, W*H*F, N].
    ggml_tensor* vx = ggml_reshape_3d(ctx, in.video, w * h * f, cfg.in_channels, n);
    vx = ggml_cont(ctx, ggml_permute(ctx, vx, 1, 0, 2, 3));
    vx = nn::linear(c, vx, p + "patchify_proj", cfg.in_channels, cfg.hidden);
    ggml_tensor* ax = nullptr;
    int64_t steps = 0;
    if (in.audio) {
        steps = in.audio->ne[1];
        ax = ggml_cont(ctx, ggml_permute(ctx, in.audio, 0, 2, 1, 3));  // [16, 8, steps, N]
        ax = ggml_reshape_3d(ctx, ax, cfg.audio_in, steps, n);
        ax = nn::linear(c, ax, p + "audio_patchify_proj", cfg.audio_in, cfg.audio_hidden);
    }
    LtxDitOutputs o;
    ggml_tensor* v_context = in.video_context;
    ggml_tensor* a_context = in.audio_context;
    if (!v_context) {
        // The text contexts: the packed one split, each through its connector.
        v_context = a_context = in.context;
        const int64_t l = in.context->ne[1];
        if (in.context->ne[0] == cfg.context + cfg.audio_context) {
            v_context =
                ggml_cont(ctx, ggml_view_3d(ctx, in.context, cfg.context, l, in.context->ne[2],
                                            in.context->nb[1], in.context->nb[2], 0));
            a_context =
                ggml_cont(ctx, ggml_view_3d(ctx, in.context, cfg.audio_context, l,
                                            in.context->ne[2], in.context->nb[1], in.context->nb[2],
                                            cfg.context * ggml_element_size(in.context)));
        }
        bool connected = false;
        if (l < 1024 && cfg.video_connector.present &&
            v_context->ne[0] == cfg.video_connector.hidden) {
            v_context = connector(c, p + "video_embeddings_connector.", cfg.video_connector,
                                  v_context, {in.vconn_cos, in.vconn_sin});
            connected = true;
        }
        if (ax && l < 1024 && cfg.audio_connector.present &&
            a_context->ne[0] == cfg.audio_connector.hidden) {
            a_context = connector(c, p + "audio_embeddings_connector.", cfg.audio_connector,
                                  a_context, {in.aconn_cos, in.aconn_sin});
            connected = true;
        }
        if (connected) {
            o.video_context = v_context;
            if (ax) o.audio_context = a_context;
        }
    }
    // Per-token timesteps come for one sample of W*H*F tokens (the denoiser's invariant).
    GGML_ASSERT(!in.video_sigma || (n == 1 && in.video_sigma->ne[0] == w * h * f));
    const LtxTimeMods t = build_ltx_time_mods(c, cfg, in.sigma, ax != nullptr, in.video_sigma);
    LtxBlockInputs bi;
    bi.v_context = v_context;
    bi.a_context = a_context;
    bi.t = &t;
    bi.video_cos = in.video_cos;
    bi.video_sin = in.video_sin;
    bi.audio_cos = in.audio_cos;
    bi.audio_sin = in.audio_sin;
    bi.vtime_cos = in.vtime_cos;
    bi.vtime_sin = in.vtime_sin;
    bi.atime_cos = in.atime_cos;
    bi.atime_sin = in.atime_sin;
    for (int64_t i = 0; i < cfg.layers; ++i) {
        bi.vx = vx;
        bi.ax = ax;
        std::tie(vx, ax) = build_ltx_block(c, cfg, static_cast<int>(i), bi);
    }
    auto out_mod = [&](const std::string& table, ggml_tensor* emb, int64_t dim, int64_t row) {
        ggml_tensor* tb = table_f32(c, table, dim, 2);
        return ggml_add(ctx, emb, ggml_view_1d(ctx, tb, dim, row * dim * ggml_element_size(tb)));
    };
    vx = nn::modulate(ctx, nn::layer_norm_plain(ctx, vx, 1e-6f),
                      out_mod(p + "scale_shift_table", t.video_embedded, cfg.hidden, 0),
                      out_mod(p + "scale_shift_table", t.video_embedded, cfg.hidden, 1));
    vx = nn::linear(c, vx, p + "proj_out", cfg.hidden, cfg.out_channels);  // [C, T, N]
    vx = ggml_cont(ctx, ggml_permute(ctx, vx, 1, 0, 2, 3));                // [T, C, N]
    o.video = ggml_reshape_4d(ctx, vx, w, h, f, cfg.out_channels * n);
    if (ax) {
        ax = nn::modulate(
            ctx, nn::layer_norm_plain(ctx, ax, 1e-6f),
            out_mod(p + "audio_scale_shift_table", t.audio_embedded, cfg.audio_hidden, 0),
            out_mod(p + "audio_scale_shift_table", t.audio_embedded, cfg.audio_hidden, 1));
        ax = nn::linear(c, ax, p + "audio_proj_out", cfg.audio_hidden, cfg.audio_out);
        ax = ggml_reshape_4d(ctx, ax, cfg.audio_bins, cfg.audio_channels, steps, n);
        o.audio = ggml_cont(ctx, ggml_permute(ctx, ax, 0, 2, 1, 3));  // [16, steps, 8, N]
    }
    return o;
}

}  // namespace ggdiff::models
