#include "families/flux2/dit.h"

#include <algorithm>

#include "io/name_util.h"
#include "io/tensor_probe.h"
#include "nn/dit.h"
#include "nn/layers.h"

namespace ggdiff::models {
namespace {

constexpr float kNormEps = 1e-6f;
constexpr int kTimeFeatures = 256;
constexpr bool kBias = false;  // FLUX.2 has no biases anywhere

// Blocks "<group>N." present under the prefix: the highest index + 1 (0: none).
int block_count(const TensorIndex& index, const std::string& prefix, const std::string& group) {
    int n = 0;
    for (const TensorInfo& t : index.tensors()) {
        if (!starts_with(t.name, prefix)) continue;
        int i = 0;
        std::string rest;
        if (take_indexed(t.name.substr(prefix.size()), group, &i, &rest)) n = std::max(n, i + 1);
    }
    return n;
}

// Tensor `n` must be [rows, cols] (torch order).
Status expect_shape(const TensorProbe& p, const std::string& n, int64_t rows, int64_t cols) {
    auto s = p.shape(n, 2);
    if (!s.ok()) return s.status();
    if ((*s)[0] != rows || (*s)[1] != cols) {
        return p.odd(n, "expected [" + std::to_string(rows) + ", " + std::to_string(cols) + "]");
    }
    return Status::Ok();
}

Status expect_vector(const TensorProbe& p, const std::string& n, int64_t len) {
    auto s = p.shape(n, 1);
    if (!s.ok()) return s.status();
    if ((*s)[0] != len) return p.odd(n, "expected " + std::to_string(len) + " values");
    return Status::Ok();
}

// The MLP embedder of a scalar (timestep or guidance): sinusoidal features of value*1000
// (cos half first), Linear, SiLU, Linear.
ggml_tensor* scalar_embedder(nn::Ctx& c, const Flux2Config& cfg, ggml_tensor* v,
                             const std::string& p) {
    return nn::scalar_embedder(c, v, p, cfg.hidden, kBias);
}

// SeFi-Image's timestep vector: each of the (semantic, texture) timesteps in `v` [2] embedded
// as 256 sinusoidal features of the raw value (no x1000), Linear, SiLU, Linear into half the
// hidden width; the two halves concatenated -> [hidden, 1].
ggml_tensor* dual_time_embedder(nn::Ctx& c, const Flux2Config& cfg, ggml_tensor* v) {
    const std::string p = cfg.prefix + "dual_time_embed.";
    const int64_t half = cfg.hidden / 2;
    auto embed = [&](int i, const char* which) {
        ggml_tensor* t = ggml_view_1d(c.ctx, v, 1, i * ggml_element_size(v));
        ggml_tensor* f = ggml_timestep_embedding(c.ctx, t, kTimeFeatures, 10000);
        const std::string e = p + which + "_embedder.";
        ggml_tensor* h = nn::linear(c, f, e + "linear_1", kTimeFeatures, half, kBias);
        return nn::linear(c, ggml_silu(c.ctx, h), e + "linear_2", half, half, kBias);
    };
    return ggml_concat(c.ctx, embed(0, "semantic"), embed(1, "texture"), 0);
}

using Qkv = nn::QkvHeads;

Qkv norm_heads(nn::Ctx& c, const Flux2Config& cfg, ggml_tensor* q, ggml_tensor* k, ggml_tensor* v,
               const std::string& norm) {
    return nn::norm_qk_heads(c, q, k, v, norm, cfg.head_dim, cfg.heads, kNormEps);
}

// The attention inputs of one stream of a double block: its fused qkv projection, or (the
// diffusers layout) separate q, k, v linears.
Qkv project_qkv(nn::Ctx& c, const Flux2Config& cfg, ggml_tensor* x, const std::string& attn) {
    return nn::project_qkv(c, x, attn + "qkv", cfg.split_qkv, attn, attn + "norm.", cfg.head_dim,
                           cfg.heads, kBias, kNormEps);
}

struct Rope {
    ggml_tensor *cos, *sin;
};

ggml_tensor* joint_attention(nn::Ctx& c, const Flux2Config& cfg, ggml_tensor* q, ggml_tensor* k,
                             ggml_tensor* v, const Rope& pe) {
    return nn::rope_attention(c.ctx, q, k, v, pe.cos, pe.sin, static_cast<int>(cfg.heads));
}

ggml_tensor* gated(ggml_context* ctx, ggml_tensor* x, ggml_tensor* y, ggml_tensor* gate) {
    return ggml_add(ctx, x, ggml_mul(ctx, y, gate));
}

// SwiGLU on x [2 * width, T, N]: silu(first half) * second half -> [width, T, N].
ggml_tensor* swiglu(ggml_context* ctx, ggml_tensor* x, int64_t width) {
    ggml_tensor* gate = ggml_silu(ctx, ggml_cont(ctx, nn::feature_rows(ctx, x, 0, width)));
    return ggml_mul(ctx, nn::feature_rows(ctx, x, width, width), gate);
}

ggml_tensor* mlp(nn::Ctx& c, const Flux2Config& cfg, ggml_tensor* x, const std::string& p) {
    ggml_tensor* h = nn::linear(c, x, p + "0", cfg.hidden, 2 * cfg.mlp_hidden, kBias);
    return nn::linear(c, swiglu(c.ctx, h, cfg.mlp_hidden), p + "2", cfg.mlp_hidden, cfg.hidden,
                      kBias);
}

// The shared modulations: six vectors per double-block stream (shift, scale, gate for the
// attention, then for the MLP) and three for every single block.
struct Mods {
    std::vector<ggml_tensor*> img, txt, single;
};

void double_block(nn::Ctx& c, const Flux2Config& cfg, ggml_tensor*& img, ggml_tensor*& txt,
                  const Mods& m, const Rope& pe, const std::string& p) {
    const int64_t hd = cfg.hidden;
    const std::vector<ggml_tensor*>& im = m.img;
    const std::vector<ggml_tensor*>& tm = m.txt;

    ggml_tensor* img_in =
        nn::modulate(c.ctx, nn::layer_norm_plain(c.ctx, img, kNormEps), im[0], im[1]);
    Qkv iq = project_qkv(c, cfg, img_in, p + "img_attn.");
    ggml_tensor* txt_in =
        nn::modulate(c.ctx, nn::layer_norm_plain(c.ctx, txt, kNormEps), tm[0], tm[1]);
    Qkv tq = project_qkv(c, cfg, txt_in, p + "txt_attn.");
    // Text tokens first, as the positions are laid out.
    ggml_tensor* q = ggml_concat(c.ctx, tq.q, iq.q, 1);
    ggml_tensor* k = ggml_concat(c.ctx, tq.k, iq.k, 1);
    ggml_tensor* v = ggml_concat(c.ctx, tq.v, iq.v, 1);
    ggml_tensor* attn = joint_attention(c, cfg, q, k, v, pe);
    const int64_t lt = txt->ne[1], li = img->ne[1];
    ggml_tensor* txt_attn = nn::token_range(c.ctx, attn, 0, lt);
    ggml_tensor* img_attn = nn::token_range(c.ctx, attn, lt, li);

    img = gated(c.ctx, img, nn::linear(c, img_attn, p + "img_attn.proj", hd, hd, kBias), im[2]);
    ggml_tensor* h = nn::modulate(c.ctx, nn::layer_norm_plain(c.ctx, img, kNormEps), im[3], im[4]);
    img = gated(c.ctx, img, mlp(c, cfg, h, p + "img_mlp."), im[5]);

    txt = gated(c.ctx, txt, nn::linear(c, txt_attn, p + "txt_attn.proj", hd, hd, kBias), tm[2]);
    h = nn::modulate(c.ctx, nn::layer_norm_plain(c.ctx, txt, kNormEps), tm[3], tm[4]);
    txt = gated(c.ctx, txt, mlp(c, cfg, h, p + "txt_mlp."), tm[5]);
}

ggml_tensor* single_block(nn::Ctx& c, const Flux2Config& cfg, ggml_tensor* x, const Mods& m,
                          const Rope& pe, const std::string& p) {
    const int64_t hd = cfg.hidden, mh = cfg.mlp_hidden;
    const std::vector<ggml_tensor*>& s = m.single;
    ggml_tensor* xm = nn::modulate(c.ctx, nn::layer_norm_plain(c.ctx, x, kNormEps), s[0], s[1]);
    ggml_tensor* fused = nn::linear(c, xm, p + "linear1", hd, 3 * hd + 2 * mh, kBias);
    Qkv a = norm_heads(c, cfg, nn::feature_rows(c.ctx, fused, 0, hd),
                       nn::feature_rows(c.ctx, fused, hd, hd),
                       nn::feature_rows(c.ctx, fused, 2 * hd, hd), p + "norm.");
    ggml_tensor* attn = joint_attention(c, cfg, a.q, a.k, a.v, pe);
    ggml_tensor* act = swiglu(c.ctx, nn::feature_rows(c.ctx, fused, 3 * hd, 2 * mh), mh);
    ggml_tensor* out =
        nn::linear(c, ggml_concat(c.ctx, attn, act, 0), p + "linear2", hd + mh, hd, kBias);
    return gated(c.ctx, x, out, s[2]);
}

}  // namespace

Result<Flux2Config> detect_flux2(const TensorIndex& index, const std::string& prefix) {
    const TensorProbe p{index, prefix, "FLUX.2"};
    Flux2Config cfg;
    cfg.prefix = prefix;
    auto txt_in = p.shape("txt_in.weight", 2);
    if (!txt_in.ok()) return txt_in.status();
    cfg.hidden = (*txt_in)[0];
    cfg.context_dim = (*txt_in)[1];
    auto img_in = p.shape("img_in.weight", 2);
    if (!img_in.ok()) return img_in.status();
    if ((*img_in)[0] != cfg.hidden) return p.odd("img_in.weight", "does not give txt_in's width");
    cfg.in_channels = (*img_in)[1];

    cfg.split_qkv = p.has("double_blocks.0.img_attn.q.weight");
    const std::string key_norm = "double_blocks.0.img_attn.norm.key_norm.scale";
    auto kn = p.shape(key_norm, 1);
    if (!kn.ok()) return kn.status();
    cfg.head_dim = (*kn)[0];
    int axes_sum = 0;
    for (int a : cfg.axes_dim) axes_sum += a;
    if (cfg.head_dim != axes_sum || cfg.hidden % cfg.head_dim != 0) {
        return p.odd(key_norm,
                     "FLUX.2 heads are " + std::to_string(axes_sum) +
                         " wide (four RoPE axes of 32) and must divide the hidden width " +
                         std::to_string(cfg.hidden));
    }
    cfg.heads = cfg.hidden / cfg.head_dim;

    auto mlp0 = p.shape("double_blocks.0.img_mlp.0.weight", 2);
    if (!mlp0.ok()) return mlp0.status();
    if ((*mlp0)[0] % 2 != 0 || (*mlp0)[1] != cfg.hidden) {
        return p.odd("double_blocks.0.img_mlp.0.weight",
                     "expected [2 x MLP width, " + std::to_string(cfg.hidden) + "] (SwiGLU)");
    }
    cfg.mlp_hidden = (*mlp0)[0] / 2;

    cfg.depth = block_count(index, prefix, "double_blocks.");
    cfg.depth_single = block_count(index, prefix, "single_blocks.");
    if (cfg.depth == 0) return p.missing("double_blocks.0.img_attn.qkv.weight");
    if (cfg.depth_single == 0) return p.missing("single_blocks.0.linear1.weight");
    const int64_t hd = cfg.hidden, mh = cfg.mlp_hidden;
    for (int i = 0; i < cfg.depth; ++i) {
        const std::string b = "double_blocks." + std::to_string(i) + ".";
        for (const char* s : {"img_", "txt_"}) {
            const std::string a = b + s + "attn.";
            if (cfg.split_qkv) {
                for (const char* part : {"q", "k", "v"}) {
                    if (Status st = expect_shape(p, a + part + ".weight", hd, hd); !st.ok())
                        return st;
                }
            } else if (Status st = expect_shape(p, a + "qkv.weight", 3 * hd, hd); !st.ok()) {
                return st;
            }
            for (const char* n : {"norm.query_norm.scale", "norm.key_norm.scale"}) {
                if (Status st = expect_vector(p, a + n, cfg.head_dim); !st.ok()) return st;
            }
            if (Status st = expect_shape(p, a + "proj.weight", hd, hd); !st.ok()) return st;
            const std::string m = b + s + "mlp.";
            if (Status st = expect_shape(p, m + "0.weight", 2 * mh, hd); !st.ok()) return st;
            if (Status st = expect_shape(p, m + "2.weight", hd, mh); !st.ok()) return st;
        }
    }
    for (int i = 0; i < cfg.depth_single; ++i) {
        const std::string b = "single_blocks." + std::to_string(i) + ".";
        if (Status st = expect_shape(p, b + "linear1.weight", 3 * hd + 2 * mh, hd); !st.ok())
            return st;
        if (Status st = expect_shape(p, b + "linear2.weight", hd, hd + mh); !st.ok()) return st;
        for (const char* n : {"norm.query_norm.scale", "norm.key_norm.scale"}) {
            if (Status st = expect_vector(p, b + n, cfg.head_dim); !st.ok()) return st;
        }
    }
    if (Status st = expect_shape(p, "double_stream_modulation_img.lin.weight", 6 * hd, hd);
        !st.ok())
        return st;
    if (Status st = expect_shape(p, "double_stream_modulation_txt.lin.weight", 6 * hd, hd);
        !st.ok())
        return st;
    if (Status st = expect_shape(p, "single_stream_modulation.lin.weight", 3 * hd, hd); !st.ok())
        return st;
    cfg.dual_time = p.has("dual_time_embed.semantic_embedder.linear_1.weight");
    if (cfg.dual_time) {
        if (hd % 2 != 0) {
            return p.odd("dual_time_embed.semantic_embedder.linear_1.weight",
                         "the hidden width must be even (two halves)");
        }
        for (const char* e : {"semantic", "texture"}) {
            const std::string n = std::string("dual_time_embed.") + e + "_embedder.";
            if (Status st = expect_shape(p, n + "linear_1.weight", hd / 2, kTimeFeatures); !st.ok())
                return st;
            if (Status st = expect_shape(p, n + "linear_2.weight", hd / 2, hd / 2); !st.ok())
                return st;
        }
    } else {
        if (Status st = expect_shape(p, "time_in.in_layer.weight", hd, kTimeFeatures); !st.ok())
            return st;
        if (Status st = expect_shape(p, "time_in.out_layer.weight", hd, hd); !st.ok()) return st;
    }
    cfg.guidance_embed = p.has("guidance_in.in_layer.weight");
    if (cfg.guidance_embed) {
        if (Status st = expect_shape(p, "guidance_in.in_layer.weight", hd, kTimeFeatures); !st.ok())
            return st;
        if (Status st = expect_shape(p, "guidance_in.out_layer.weight", hd, hd); !st.ok())
            return st;
    }
    cfg.final_scale_first = p.has("final_layer.adaLN_scale_shift.weight");
    const std::string fin_mod = cfg.final_scale_first ? "final_layer.adaLN_scale_shift.weight"
                                                      : "final_layer.adaLN_modulation.1.weight";
    if (Status st = expect_shape(p, fin_mod, 2 * hd, hd); !st.ok()) return st;
    auto fin = p.shape("final_layer.linear.weight", 2);
    if (!fin.ok()) return fin.status();
    if ((*fin)[1] != hd)
        return p.odd("final_layer.linear.weight", "does not take the hidden width");
    cfg.out_channels = (*fin)[0];
    return cfg;
}

std::vector<float> flux2_position_ids(const Flux2Config& cfg, int64_t latent_w, int64_t latent_h,
                                      int64_t text_tokens, const std::vector<Flux2RefSize>& refs) {
    constexpr size_t kAxes = 4;
    int64_t tokens = text_tokens + latent_w * latent_h;
    for (const Flux2RefSize& r : refs) tokens += r.first * r.second;
    std::vector<float> ids(static_cast<size_t>(tokens) * kAxes, 0.0f);
    size_t t = 0;
    for (int64_t i = 0; i < text_tokens; ++i, ++t) ids[t * kAxes + 3] = static_cast<float>(i);
    auto grid = [&](int64_t w, int64_t h, float index) {
        for (int64_t r = 0; r < h; ++r) {
            for (int64_t col = 0; col < w; ++col, ++t) {
                ids[t * kAxes + 0] = index;
                ids[t * kAxes + 1] = static_cast<float>(r);
                ids[t * kAxes + 2] = static_cast<float>(col);
            }
        }
    };
    grid(latent_w, latent_h, 0.0f);
    for (size_t k = 0; k < refs.size(); ++k) {
        // The reference truncates k * scale to an integer.
        const float index =
            static_cast<float>(static_cast<int>(static_cast<float>(k + 1) * cfg.ref_index_scale));
        grid(refs[k].first, refs[k].second, index);
    }
    return ids;
}

Flux2Positions flux2_positions(const Flux2Config& cfg, int64_t latent_w, int64_t latent_h,
                               int64_t text_tokens, const std::vector<Flux2RefSize>& refs,
                               nn::RopeWrap wrap) {
    constexpr size_t kAxes = 4;
    std::vector<int> wrap_lengths;
    int64_t first = text_tokens;
    nn::wrap_grid(wrap_lengths, kAxes, first, latent_h, latent_w, wrap);
    first += latent_w * latent_h;
    for (const Flux2RefSize& r : refs) {
        nn::wrap_grid(wrap_lengths, kAxes, first, r.second, r.first, wrap);
        first += r.first * r.second;
    }
    nn::RopeTable tab =
        nn::rope_table(flux2_position_ids(cfg, latent_w, latent_h, text_tokens, refs), cfg.axes_dim,
                       cfg.theta, wrap_lengths);
    Flux2Positions pos;
    pos.cos = HostTensor({1, tab.pairs, 1, tab.tokens});
    pos.sin = HostTensor({1, tab.pairs, 1, tab.tokens});
    pos.cos.data = std::move(tab.cos);
    pos.sin.data = std::move(tab.sin);
    return pos;
}

ggml_tensor* build_flux2(nn::Ctx& c, const Flux2Config& cfg, ggml_tensor* x, ggml_tensor* timesteps,
                         ggml_tensor* context, const std::vector<ggml_tensor*>& refs,
                         ggml_tensor* guidance, ggml_tensor* pe_cos, ggml_tensor* pe_sin,
                         const std::vector<int>* skip) {
    const std::string& p = cfg.prefix;
    auto skipped = [skip](int block) {
        return skip && std::find(skip->begin(), skip->end(), block) != skip->end();
    };
    const int64_t W = x->ne[0], H = x->ne[1], N = x->ne[3];

    // Patch size 1: one token per latent pixel; the references follow the image tokens.
    ggml_tensor* tokens = nn::image_to_tokens(c.ctx, x);  // [C, W*H, N]
    const int64_t li = tokens->ne[1];
    for (ggml_tensor* r : refs) {
        ggml_tensor* rt = nn::image_to_tokens(c.ctx, r);  // [C, w*h, 1]
        if (rt->ne[2] != N) {
            rt = ggml_repeat(c.ctx, rt,
                             ggml_new_tensor_3d(c.ctx, rt->type, rt->ne[0], rt->ne[1], N));
        }
        tokens = ggml_concat(c.ctx, tokens, rt, 1);
    }
    ggml_tensor* img = nn::linear(c, tokens, p + "img_in", cfg.in_channels, cfg.hidden, kBias);

    ggml_tensor* vec;
    if (cfg.dual_time) {
        vec = dual_time_embedder(c, cfg, timesteps);  // [hidden, 1]: the whole batch's
        if (N != 1)
            vec = ggml_repeat(c.ctx, vec, ggml_new_tensor_2d(c.ctx, vec->type, cfg.hidden, N));
    } else {
        vec = scalar_embedder(c, cfg, timesteps, p + "time_in.");
    }
    if (cfg.guidance_embed && guidance) {
        vec = ggml_add(c.ctx, vec, scalar_embedder(c, cfg, guidance, p + "guidance_in."));
    }
    Mods mods;
    mods.img = nn::modulation(c, vec, p + "double_stream_modulation_img.lin", cfg.hidden, 6, kBias);
    mods.txt = nn::modulation(c, vec, p + "double_stream_modulation_txt.lin", cfg.hidden, 6, kBias);
    mods.single = nn::modulation(c, vec, p + "single_stream_modulation.lin", cfg.hidden, 3, kBias);

    // One conditioning may serve the whole batch.
    if (context->ne[2] != N) {
        context = ggml_repeat(
            c.ctx, context,
            ggml_new_tensor_3d(c.ctx, context->type, context->ne[0], context->ne[1], N));
    }
    ggml_tensor* txt = nn::linear(c, context, p + "txt_in", cfg.context_dim, cfg.hidden, kBias);
    const Rope pe{pe_cos, pe_sin};

    for (int i = 0; i < cfg.depth; ++i) {
        if (skipped(i)) continue;
        double_block(c, cfg, img, txt, mods, pe, p + "double_blocks." + std::to_string(i) + ".");
    }
    const int64_t lt = txt->ne[1];
    ggml_tensor* joint = ggml_concat(c.ctx, txt, img, 1);
    for (int i = 0; i < cfg.depth_single; ++i) {
        if (skipped(cfg.depth + i)) continue;
        joint =
            single_block(c, cfg, joint, mods, pe, p + "single_blocks." + std::to_string(i) + ".");
    }
    // The image tokens only: text before them, reference tokens after them are dropped.
    img = nn::token_range(c.ctx, joint, lt, li);

    // (shift, scale) in the original; diffusers stores (scale, shift).
    const bool swapped = cfg.final_scale_first;
    auto m = nn::modulation(
        c, vec, p + (swapped ? "final_layer.adaLN_scale_shift" : "final_layer.adaLN_modulation.1"),
        cfg.hidden, 2, kBias);
    img = nn::modulate(c.ctx, nn::layer_norm_plain(c.ctx, img, kNormEps), m[swapped ? 1 : 0],
                       m[swapped ? 0 : 1]);
    img = nn::linear(c, img, p + "final_layer.linear", cfg.hidden, cfg.out_channels, kBias);
    return nn::tokens_to_image(c.ctx, img, W, H);
}

}  // namespace ggdiff::models
