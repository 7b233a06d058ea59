#include "families/flux/dit.h"

#include <algorithm>

#include "families/flux/pulid.h"
#include "io/tensor_probe.h"
#include "nn/dit.h"
#include "nn/layers.h"
#include "runtime/kernel_choices.h"

namespace ggdiff::models {
namespace {

constexpr float kNormEps = 1e-6f;

// The MLP embedder of a scalar (timestep or guidance): sinusoidal features of value*1000,
// Linear, SiLU, Linear.
ggml_tensor* scalar_embedder(nn::Ctx& c, const FluxConfig& cfg, ggml_tensor* v,
                             const std::string& p) {
    return nn::scalar_embedder(c, v, p, cfg.hidden);
}

using Qkv = nn::QkvHeads;

Qkv norm_heads(nn::Ctx& c, const FluxConfig& cfg, ggml_tensor* q, ggml_tensor* k, ggml_tensor* v,
               const std::string& norm) {
    return nn::norm_qk_heads(c, q, k, v, norm, cfg.head_dim, cfg.heads, kNormEps);
}

// The attention inputs of one stream: the fused qkv projection `fused` (original layout),
// or its separate q, k, v linears (diffusers layout: "<split>q", "<split>k", "<split>v").
Qkv project_qkv(nn::Ctx& c, const FluxConfig& cfg, ggml_tensor* x, const std::string& fused,
                const std::string& split, const std::string& norm) {
    return nn::project_qkv(c, x, fused, cfg.split_qkv, split, norm, cfg.head_dim, cfg.heads,
                           cfg.qkv_bias, kNormEps);
}

struct Rope {
    ggml_tensor *cos, *sin;
};

ggml_tensor* joint_attention(nn::Ctx& c, const FluxConfig& cfg, ggml_tensor* q, ggml_tensor* k,
                             ggml_tensor* v, const Rope& pe, ggml_tensor* key_mask) {
    return nn::rope_attention(c.ctx, q, k, v, pe.cos, pe.sin, static_cast<int>(cfg.heads),
                              key_mask);
}

ggml_tensor* gated(ggml_context* ctx, ggml_tensor* x, ggml_tensor* y, ggml_tensor* gate) {
    return ggml_add(ctx, x, ggml_mul(ctx, y, gate));
}

ggml_tensor* mlp(nn::Ctx& c, const FluxConfig& cfg, ggml_tensor* x, const std::string& p) {
    if (cfg.swiglu_mlp) {
        ggml_tensor* gate = nn::linear(c, x, p + "gate_proj", cfg.hidden, cfg.mlp_hidden);
        ggml_tensor* up = nn::linear(c, x, p + "up_proj", cfg.hidden, cfg.mlp_hidden);
        return nn::linear(c, ggml_mul(c.ctx, up, ggml_silu(c.ctx, gate)), p + "down_proj",
                          cfg.mlp_hidden, cfg.hidden);
    }
    ggml_tensor* h = nn::linear(c, x, p + "0", cfg.hidden, cfg.mlp_hidden);
    return nn::linear(c, ggml_gelu(c.ctx, h), p + "2", cfg.mlp_hidden, cfg.hidden);
}

void double_block(nn::Ctx& c, const FluxConfig& cfg, ggml_tensor*& img, ggml_tensor*& txt,
                  const FluxMods& im, const FluxMods& tm, const Rope& pe, ggml_tensor* key_mask,
                  const std::string& p) {
    const int64_t hd = cfg.hidden;

    ggml_tensor* img_in =
        nn::modulate(c.ctx, nn::layer_norm_plain(c.ctx, img, kNormEps), im[0], im[1]);
    ggml_tensor* txt_in =
        nn::modulate(c.ctx, nn::layer_norm_plain(c.ctx, txt, kNormEps), tm[0], tm[1]);
    Qkv iq = project_qkv(c, cfg, img_in, p + "img_attn.qkv", p + "img_attn.", p + "img_attn.norm.");
    Qkv tq = project_qkv(c, cfg, txt_in, p + "txt_attn.qkv", p + "txt_attn.", p + "txt_attn.norm.");
    // Text tokens first, as the positions are laid out.
    ggml_tensor* q = ggml_concat(c.ctx, tq.q, iq.q, 1);
    ggml_tensor* k = ggml_concat(c.ctx, tq.k, iq.k, 1);
    ggml_tensor* v = ggml_concat(c.ctx, tq.v, iq.v, 1);
    ggml_tensor* attn = joint_attention(c, cfg, q, k, v, pe, key_mask);
    const int64_t lt = txt->ne[1], li = img->ne[1];
    ggml_tensor* txt_attn = nn::token_range(c.ctx, attn, 0, lt);
    ggml_tensor* img_attn = nn::token_range(c.ctx, attn, lt, li);

    img = gated(c.ctx, img, nn::linear(c, img_attn, p + "img_attn.proj", hd, hd), im[2]);
    ggml_tensor* h = nn::modulate(c.ctx, nn::layer_norm_plain(c.ctx, img, kNormEps), im[3], im[4]);
    img = gated(c.ctx, img, mlp(c, cfg, h, p + "img_mlp."), im[5]);

    txt = gated(c.ctx, txt, nn::linear(c, txt_attn, p + "txt_attn.proj", hd, hd), tm[2]);
    h = nn::modulate(c.ctx, nn::layer_norm_plain(c.ctx, txt, kNormEps), tm[3], tm[4]);
    txt = gated(c.ctx, txt, mlp(c, cfg, h, p + "txt_mlp."), tm[5]);
}

ggml_tensor* single_block(nn::Ctx& c, const FluxConfig& cfg, ggml_tensor* x, const FluxMods& m,
                          const Rope& pe, ggml_tensor* key_mask, const std::string& p) {
    const int64_t hd = cfg.hidden, mh = cfg.mlp_hidden;
    ggml_tensor* xm = nn::modulate(c.ctx, nn::layer_norm_plain(c.ctx, x, kNormEps), m[0], m[1]);
    Qkv a;
    ggml_tensor* act = nullptr;
    if (cfg.split_qkv) {
        a = project_qkv(c, cfg, xm, "", p, p + "norm.");
        act = nn::linear(c, xm, p + "mlp_in", hd, mh);
    } else {
        const int64_t mlp_rows = cfg.swiglu_mlp ? 2 * mh : mh;
        ggml_tensor* fused = nn::linear(c, xm, p + "linear1", hd, 3 * hd + mlp_rows);
        a = norm_heads(c, cfg, nn::feature_rows(c.ctx, fused, 0, hd),
                       nn::feature_rows(c.ctx, fused, hd, hd),
                       nn::feature_rows(c.ctx, fused, 2 * hd, hd), p + "norm.");
        if (cfg.swiglu_mlp) {
            // value * silu(gate), the value rows first
            ggml_tensor* gate = ggml_cont(c.ctx, nn::feature_rows(c.ctx, fused, 3 * hd + mh, mh));
            act =
                ggml_mul(c.ctx, nn::feature_rows(c.ctx, fused, 3 * hd, mh), ggml_silu(c.ctx, gate));
        } else {
            act = ggml_cont(c.ctx, nn::feature_rows(c.ctx, fused, 3 * hd, mh));
        }
    }
    if (!cfg.swiglu_mlp) act = ggml_gelu(c.ctx, act);
    ggml_tensor* attn = joint_attention(c, cfg, a.q, a.k, a.v, pe, key_mask);
    ggml_tensor* out = nn::linear(c, ggml_concat(c.ctx, attn, act, 0), p + "linear2", hd + mh, hd);
    return gated(c.ctx, x, out, m[2]);
}

}  // namespace

Result<FluxConfig> detect_flux(const TensorIndex& index, const std::string& prefix) {
    const TensorProbe p{index, prefix, "FLUX"};
    FluxConfig cfg;
    cfg.prefix = prefix;
    // Chroma: every modulation vector from the approximator; Radiance patches pixels with a
    // convolution (families/chroma reads its pixel head).
    cfg.approximator = p.has("distilled_guidance_layer.in_proj.weight");
    cfg.pixel_patch_in = p.has("img_in_patch.weight");
    if (cfg.pixel_patch_in) {
        auto patch = p.shape("img_in_patch.weight", 4);
        if (!patch.ok()) return patch.status();
        cfg.hidden = (*patch)[0];
        cfg.patch = 16;
        cfg.in_channels = cfg.out_channels = (*patch)[1] * cfg.patch * cfg.patch;
    } else {
        auto img_in = p.shape("img_in.weight", 2);
        if (!img_in.ok()) return img_in.status();
        cfg.hidden = (*img_in)[0];
        cfg.in_channels = (*img_in)[1];
        if (cfg.in_channels % (cfg.patch * cfg.patch) != 0) {
            return p.odd("img_in.weight", "input width is not a multiple of the 2x2 patch");
        }
    }
    auto qn = p.shape("double_blocks.0.img_attn.norm.query_norm.scale", 1);
    if (!qn.ok()) return qn.status();
    cfg.head_dim = (*qn)[0];
    if (cfg.head_dim <= 0 || cfg.hidden % cfg.head_dim != 0 || cfg.head_dim % 16 != 0) {
        return p.odd("double_blocks.0.img_attn.norm.query_norm.scale",
                     "head width must divide the hidden width and be a multiple of 16");
    }
    cfg.heads = cfg.hidden / cfg.head_dim;
    // FLUX's position axes: 1/8 of each head for the image index, 7/16 each for row, col.
    cfg.axes_dim = {static_cast<int>(cfg.head_dim / 8), static_cast<int>(cfg.head_dim * 7 / 16),
                    static_cast<int>(cfg.head_dim * 7 / 16)};
    cfg.swiglu_mlp = p.has("double_blocks.0.img_mlp.gate_proj.weight");
    cfg.txt_norm = p.has("txt_norm.scale");
    auto mlp0 = p.shape(cfg.swiglu_mlp ? "double_blocks.0.img_mlp.gate_proj.weight"
                                       : "double_blocks.0.img_mlp.0.weight",
                        2);
    if (!mlp0.ok()) return mlp0.status();
    cfg.mlp_hidden = (*mlp0)[0];
    auto txt_in = p.shape("txt_in.weight", 2);
    if (!txt_in.ok()) return txt_in.status();
    if ((*txt_in)[0] != cfg.hidden) return p.odd("txt_in.weight", "does not give hidden width");
    cfg.context_dim = (*txt_in)[1];
    cfg.vec_in_dim = 0;
    if (p.has("vector_in.in_layer.weight")) {
        auto vi = p.shape("vector_in.in_layer.weight", 2);
        if (!vi.ok()) return vi.status();
        cfg.vec_in_dim = (*vi)[1];
    }
    cfg.guidance_embed = p.has("guidance_in.in_layer.weight");
    // diffusers files keep q, k, v apart (see families/flux/names.cpp).
    cfg.split_qkv = p.has("double_blocks.0.img_attn.q.weight");
    const std::string qkv = cfg.split_qkv ? "img_attn.q" : "img_attn.qkv";
    cfg.qkv_bias = p.has("double_blocks.0." + qkv + ".bias");
    cfg.depth = p.count("double_blocks.", qkv + ".weight");
    cfg.depth_single =
        p.count("single_blocks.", cfg.split_qkv ? "mlp_in.weight" : "linear1.weight");
    if (cfg.depth == 0) {
        return p.missing("double_blocks.0." + qkv + ".weight");
    }
    cfg.final_scale_first = p.has("final_layer.adaLN_scale_shift.weight");
    if (cfg.pixel_patch_in) return cfg;  // Radiance: no final layer, a pixel head instead
    auto fin = p.shape("final_layer.linear.weight", 2);
    if (!fin.ok()) return fin.status();
    cfg.out_channels = (*fin)[0];
    if (cfg.out_channels % (cfg.patch * cfg.patch) != 0) {
        return p.odd("final_layer.linear.weight", "output is not a multiple of the 2x2 patch");
    }
    return cfg;
}

FluxPositions flux_positions(const FluxConfig& cfg, int64_t latent_w, int64_t latent_h,
                             int64_t text_tokens, const std::vector<FluxRefSize>& refs,
                             bool increase_ref_index, nn::RopeWrap wrap) {
    const int64_t p = cfg.patch;
    std::vector<float> ids(static_cast<size_t>(text_tokens * 3), 0.0f);
    // LongCat: text along the diagonal, everything else past it.
    const bool longcat = cfg.longcat_positions;
    const int64_t offset = longcat ? text_tokens : 0;
    const float image_index = longcat ? 1.0f : 0.0f;
    if (longcat || cfg.diagonal_text_ids) {
        for (int64_t i = 0; i < text_tokens; ++i) {
            ids[static_cast<size_t>(i * 3 + 1)] = static_cast<float>(i);
            ids[static_cast<size_t>(i * 3 + 2)] = static_cast<float>(i);
        }
    }
    std::vector<int> wrap_lengths;  // seamless tiling: each grid wraps on its own size
    // The patch grid of a w x h latent at (index, row0 + r, col0 + c).
    auto grid = [&](int64_t lw, int64_t lh, float index, int64_t row0, int64_t col0) {
        const int64_t h = (lh + p / 2) / p, w = (lw + p / 2) / p;
        nn::wrap_grid(wrap_lengths, 3, static_cast<int64_t>(ids.size() / 3), h, w, wrap);
        for (int64_t r = 0; r < h; ++r) {
            for (int64_t col = 0; col < w; ++col) {
                ids.push_back(index);
                ids.push_back(static_cast<float>(row0 + r));
                ids.push_back(static_cast<float>(col0 + col));
            }
        }
    };
    grid(latent_w, latent_h, image_index, offset, offset);
    int64_t used_h = 0, used_w = 0;  // the extent of the references placed so far
    for (size_t k = 0; k < refs.size(); ++k) {
        const int64_t rw = refs[k].first, rh = refs[k].second;
        int64_t row0 = 0, col0 = 0;
        if (!increase_ref_index) {
            if (rh + used_h > rw + used_w) {
                col0 = used_w;
            } else {
                row0 = used_h;
            }
        }
        grid(rw, rh, image_index + (increase_ref_index ? static_cast<float>(k + 1) : 1.0f),
             row0 + offset, col0 + offset);
        used_h = std::max(used_h, rh + row0);
        used_w = std::max(used_w, rw + col0);
    }
    nn::RopeTable tab = nn::rope_table(ids, cfg.axes_dim, cfg.theta, wrap_lengths);
    FluxPositions pos;
    pos.cos = HostTensor({1, tab.pairs, 1, tab.tokens});
    pos.sin = HostTensor({1, tab.pairs, 1, tab.tokens});
    pos.cos.data = std::move(tab.cos);
    pos.sin.data = std::move(tab.sin);
    return pos;
}

ggml_tensor* flux_image_tokens(nn::Ctx& c, const FluxConfig& cfg, ggml_tensor* x,
                               const std::vector<ggml_tensor*>& refs) {
    const int ps = cfg.patch;
    const int64_t N = x->ne[3];
    // Seamless tiling pads a latent that is not whole patches by wrap-around.
    const KernelChoices k = kernel_choices(c.ctx);
    auto pad = [&](ggml_tensor* t) {
        return nn::pad_to_patch(c.ctx, t, ps, k.circular_x, k.circular_y);
    };
    ggml_tensor* tokens = nn::patchify(c.ctx, pad(x), ps);
    // Reference latents (Kontext) follow the image tokens; one set serves the whole batch.
    for (ggml_tensor* r : refs) {
        ggml_tensor* rt = nn::patchify(c.ctx, pad(r), ps);
        if (rt->ne[2] != N) {
            rt = ggml_repeat(c.ctx, rt,
                             ggml_new_tensor_3d(c.ctx, rt->type, rt->ne[0], rt->ne[1], N));
        }
        tokens = ggml_concat(c.ctx, tokens, rt, 1);
    }
    return nn::linear(c, tokens, cfg.prefix + "img_in", cfg.in_channels, cfg.hidden);
}

ggml_tensor* flux_text_tokens(nn::Ctx& c, const FluxConfig& cfg, ggml_tensor* context, int64_t n) {
    // One conditioning may serve the whole batch.
    if (context->ne[2] != n) {
        context = ggml_repeat(
            c.ctx, context,
            ggml_new_tensor_3d(c.ctx, context->type, context->ne[0], context->ne[1], n));
    }
    if (cfg.txt_norm) {
        context =
            nn::rms_norm(c, context, cfg.prefix + "txt_norm.scale", cfg.context_dim, kNormEps);
    }
    return nn::linear(c, context, cfg.prefix + "txt_in", cfg.context_dim, cfg.hidden);
}

ggml_tensor* flux_blocks(nn::Ctx& c, const FluxConfig& cfg, ggml_tensor* img, ggml_tensor* txt,
                         const FluxModSource& mods, ggml_tensor* pe_cos, ggml_tensor* pe_sin,
                         ggml_tensor* key_mask, const std::vector<int>* skip,
                         const FluxIdentity* identity) {
    const std::string& p = cfg.prefix;
    auto skipped = [skip](int block) {
        return skip && std::find(skip->begin(), skip->end(), block) != skip->end();
    };
    const Rope pe{pe_cos, pe_sin};
    int module = 0;  // PuLID's next cross-attention module
    for (int i = 0; i < cfg.depth; ++i) {
        if (skipped(i)) continue;
        const FluxMods im = mods(FluxModSite::DoubleImg, i);
        const FluxMods tm = mods(FluxModSite::DoubleTxt, i);
        double_block(c, cfg, img, txt, im, tm, pe, key_mask,
                     p + "double_blocks." + std::to_string(i) + ".");
        if (identity && i % identity->cfg->double_interval == 0) {
            img = pulid_inject(c, *identity, module++, img);
        }
    }
    const int64_t lt = txt->ne[1], li = img->ne[1];
    ggml_tensor* joint = ggml_concat(c.ctx, txt, img, 1);
    for (int i = 0; i < cfg.depth_single; ++i) {
        if (skipped(cfg.depth + i)) continue;
        joint = single_block(c, cfg, joint, mods(FluxModSite::Single, i), pe, key_mask,
                             p + "single_blocks." + std::to_string(i) + ".");
        if (identity && i % identity->cfg->single_interval == 0) {
            // The image tokens (after the text) take the identity; the text passes as it is.
            ggml_tensor* image =
                pulid_inject(c, *identity, module++, nn::token_range(c.ctx, joint, lt, li));
            joint = ggml_concat(c.ctx, nn::token_range(c.ctx, joint, 0, lt), image, 1);
        }
    }
    return nn::token_range(c.ctx, joint, lt, li);
}

ggml_tensor* flux_final_layer(nn::Ctx& c, const FluxConfig& cfg, ggml_tensor* img,
                              ggml_tensor* shift, ggml_tensor* scale) {
    img = nn::modulate(c.ctx, nn::layer_norm_plain(c.ctx, img, kNormEps), shift, scale);
    return nn::linear(c, img, cfg.prefix + "final_layer.linear", cfg.hidden, cfg.out_channels);
}

ggml_tensor* build_flux(nn::Ctx& c, const FluxConfig& cfg, ggml_tensor* x, ggml_tensor* timesteps,
                        ggml_tensor* context, ggml_tensor* y, ggml_tensor* guidance,
                        ggml_tensor* pe_cos, ggml_tensor* pe_sin, const std::vector<int>* skip,
                        const std::vector<ggml_tensor*>& refs, const FluxIdentity* identity) {
    const std::string& p = cfg.prefix;
    const int64_t W = x->ne[0], H = x->ne[1], N = x->ne[3];
    const int ps = cfg.patch;
    const int64_t w = (W + ps - 1) / ps, h = (H + ps - 1) / ps;
    ggml_tensor* img = flux_image_tokens(c, cfg, x, refs);
    ggml_tensor* vec = scalar_embedder(c, cfg, timesteps, p + "time_in.");
    if (cfg.guidance_embed && guidance) {
        vec = ggml_add(c.ctx, vec, scalar_embedder(c, cfg, guidance, p + "guidance_in."));
    }
    if (cfg.vec_in_dim > 0 && y) {
        ggml_tensor* v = nn::linear(c, y, p + "vector_in.in_layer", cfg.vec_in_dim, cfg.hidden);
        v = nn::linear(c, ggml_silu(c.ctx, v), p + "vector_in.out_layer", cfg.hidden, cfg.hidden);
        vec = ggml_add(c.ctx, vec, v);
    }
    ggml_tensor* txt = flux_text_tokens(c, cfg, context, N);
    // Each block's own adaLN linear of vec.
    const FluxModSource mods = [&](FluxModSite site, int i) {
        const std::string b = std::to_string(i) + ".";
        switch (site) {
            case FluxModSite::DoubleImg:
                return nn::modulation(c, vec, p + "double_blocks." + b + "img_mod.lin", cfg.hidden,
                                      6);
            case FluxModSite::DoubleTxt:
                return nn::modulation(c, vec, p + "double_blocks." + b + "txt_mod.lin", cfg.hidden,
                                      6);
            case FluxModSite::Single:
                break;
        }
        return nn::modulation(c, vec, p + "single_blocks." + b + "modulation.lin", cfg.hidden, 3);
    };
    img = flux_blocks(c, cfg, img, txt, mods, pe_cos, pe_sin, nullptr, skip, identity);
    // The image tokens only: reference tokens after them are dropped.
    if (img->ne[1] != w * h) img = nn::token_range(c.ctx, img, 0, w * h);

    // (shift, scale) in the original; diffusers stores (scale, shift).
    const bool swapped = cfg.final_scale_first;
    auto m = nn::modulation(
        c, vec, p + (swapped ? "final_layer.adaLN_scale_shift" : "final_layer.adaLN_modulation.1"),
        cfg.hidden, 2);
    img = flux_final_layer(c, cfg, img, m[swapped ? 1 : 0], m[swapped ? 0 : 1]);
    return nn::crop_latent(c.ctx, nn::unpatchify(c.ctx, img, w, h, ps), W, H);
}

}  // namespace ggdiff::models
