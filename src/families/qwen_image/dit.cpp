#include "families/qwen_image/dit.h"

#include <ggml.h>

#include <cmath>

#include "io/name_util.h"
#include "nn/dit.h"
#include "nn/layers.h"
#include "runtime/kernel_choices.h"

namespace ggdiff::models {

namespace {

ggml_tensor* rms(nn::Ctx& c, ggml_tensor* x, const std::string& name, int64_t dim) {
    return ggml_mul(c.ctx, ggml_rms_norm(c.ctx, x, 1e-6f), c.W(name, {dim}));
}

// x * (1 + scale) + shift with [dim, 1, N] modulation vectors.
ggml_tensor* modulate(ggml_context* ctx, ggml_tensor* x, ggml_tensor* shift, ggml_tensor* scale) {
    return ggml_add(ctx, ggml_add(ctx, x, ggml_mul(ctx, x, scale)), shift);
}

// linear(silu(vec)) of vec [dim, N], split into `chunks` vectors [dim, 1, N].
std::vector<ggml_tensor*> modulation(nn::Ctx& c, ggml_tensor* vec, const std::string& p,
                                     int64_t dim, int chunks) {
    ggml_tensor* m = nn::linear(c, ggml_silu(c.ctx, vec), p, dim, chunks * dim);
    const int64_t n = m->ne[1];
    const size_t es = ggml_element_size(m);
    std::vector<ggml_tensor*> out;
    for (int k = 0; k < chunks; ++k) {
        out.push_back(
            ggml_cont(c.ctx, ggml_view_3d(c.ctx, m, dim, 1, n, m->nb[1], m->nb[1], k * dim * es)));
    }
    return out;
}

// Rotation of the interleaved pairs (x[2i], x[2i+1]) of every head by per-token angles:
// x [heads*d, T, N], cos/sin [1, d/2, 1, T].
ggml_tensor* rope(ggml_context* ctx, ggml_tensor* x, ggml_tensor* cos, ggml_tensor* sin,
                  int64_t heads) {
    const int64_t dim = x->ne[0], t = x->ne[1], n = x->ne[2], d = dim / heads;
    const size_t es = ggml_element_size(x);
    ggml_tensor* x0 = ggml_view_4d(ctx, x, 1, d / 2, heads, t * n, 2 * es, d * es, dim * es, 0);
    ggml_tensor* x1 = ggml_view_4d(ctx, x, 1, d / 2, heads, t * n, 2 * es, d * es, dim * es, es);
    ggml_tensor* r0 = ggml_sub(ctx, ggml_mul(ctx, x0, cos), ggml_mul(ctx, x1, sin));
    ggml_tensor* r1 = ggml_add(ctx, ggml_mul(ctx, x0, sin), ggml_mul(ctx, x1, cos));
    return ggml_reshape_3d(ctx, ggml_concat(ctx, r0, r1, 0), dim, t, n);
}

// Per-head RMS norm of q or k [heads*d, T, N].
ggml_tensor* head_rms(nn::Ctx& c, ggml_tensor* x, const std::string& name, int64_t d) {
    const int64_t dim = x->ne[0], t = x->ne[1], n = x->ne[2];
    x = ggml_reshape_4d(c.ctx, x, d, dim / d, t, n);
    return ggml_reshape_3d(c.ctx, rms(c, x, name, d), dim, t, n);
}

// Latent [2w, 2h, F*C, N] -> tokens [C*4, w*h*F, N]: tokens frame-major, then rows, then
// columns; features (channel, row in patch, column in patch).
ggml_tensor* patchify(ggml_context* ctx, ggml_tensor* x, int64_t frames) {
    const int64_t W = x->ne[0], H = x->ne[1], C = x->ne[2] / frames, N = x->ne[3];
    const int64_t w = W / 2, h = H / 2;
    x = ggml_reshape_4d(ctx, x, 2, w, 2, h * frames * C * N);
    x = ggml_cont(ctx, ggml_permute(ctx, x, 0, 2, 1, 3));  // [px, py, w, rest]
    x = ggml_reshape_4d(ctx, x, 4, w * h * frames, C, N);
    x = ggml_cont(ctx, ggml_permute(ctx, x, 0, 2, 1, 3));  // [4, C, tokens, N]
    return ggml_reshape_3d(ctx, x, 4 * C, w * h * frames, N);
}

ggml_tensor* unpatchify(ggml_context* ctx, ggml_tensor* x, int64_t w, int64_t h, int64_t frames) {
    const int64_t C = x->ne[0] / 4, N = x->ne[2];
    x = ggml_reshape_4d(ctx, x, 4, C, w * h * frames, N);
    x = ggml_cont(ctx, ggml_permute(ctx, x, 0, 2, 1, 3));  // [4, tokens, C, N]
    x = ggml_reshape_4d(ctx, x, 2, 2, w, h * frames * C * N);
    x = ggml_cont(ctx, ggml_permute(ctx, x, 0, 2, 1, 3));  // [px, w, py, rest]
    return ggml_reshape_4d(ctx, x, 2 * w, 2 * h, frames * C, N);
}

ggml_tensor* mlp(nn::Ctx& c, ggml_tensor* x, const std::string& p, int64_t dim, int64_t hidden) {
    x = ggml_gelu(c.ctx, nn::linear(c, x, p + "net.0.proj", dim, hidden));
    return nn::linear(c, x, p + "net.2", hidden, dim);
}

// The image stream's modulation vectors per token: the first `n_img` tokens take `m`, the
// reference tokens after them `m0` (zero_cond_t) -> [dim, tokens, N] each.
std::vector<ggml_tensor*> per_token(ggml_context* ctx, const std::vector<ggml_tensor*>& m,
                                    const std::vector<ggml_tensor*>& m0, int64_t n_img,
                                    int64_t tokens) {
    std::vector<ggml_tensor*> out;
    for (size_t k = 0; k < m.size(); ++k) {
        const int64_t dim = m[k]->ne[0], n = m[k]->ne[2];
        ggml_tensor* a = ggml_repeat(ctx, m[k], ggml_new_tensor_3d(ctx, m[k]->type, dim, n_img, n));
        ggml_tensor* b =
            ggml_repeat(ctx, m0[k], ggml_new_tensor_3d(ctx, m0[k]->type, dim, tokens - n_img, n));
        out.push_back(ggml_concat(ctx, a, b, 1));
    }
    return out;
}

// temb0: the timestep-0 embedding for the reference tokens after the first n_img image tokens
// (zero_cond_t), or null.
void block(nn::Ctx& c, const QwenImageConfig& cfg, const std::string& p, ggml_tensor*& img,
           ggml_tensor*& txt, ggml_tensor* temb, ggml_tensor* temb0, int64_t n_img,
           ggml_tensor* cos, ggml_tensor* sin) {
    ggml_context* ctx = c.ctx;
    const int64_t dim = cfg.width, d = cfg.head_dim;
    std::vector<ggml_tensor*> im = modulation(c, temb, p + "img_mod.1", dim, 6);
    if (temb0 && img->ne[1] > n_img) {
        im = per_token(ctx, im, modulation(c, temb0, p + "img_mod.1", dim, 6), n_img, img->ne[1]);
    }
    const std::vector<ggml_tensor*> tm = modulation(c, temb, p + "txt_mod.1", dim, 6);

    ggml_tensor* ia = modulate(ctx, ggml_norm(ctx, img, 1e-6f), im[0], im[1]);
    ggml_tensor* ta = modulate(ctx, ggml_norm(ctx, txt, 1e-6f), tm[0], tm[1]);
    const std::string a = p + "attn.";
    ggml_tensor* iq = head_rms(c, nn::linear(c, ia, a + "to_q", dim, dim), a + "norm_q.weight", d);
    ggml_tensor* ik = head_rms(c, nn::linear(c, ia, a + "to_k", dim, dim), a + "norm_k.weight", d);
    ggml_tensor* iv = nn::linear(c, ia, a + "to_v", dim, dim);
    ggml_tensor* tq =
        head_rms(c, nn::linear(c, ta, a + "add_q_proj", dim, dim), a + "norm_added_q.weight", d);
    ggml_tensor* tk =
        head_rms(c, nn::linear(c, ta, a + "add_k_proj", dim, dim), a + "norm_added_k.weight", d);
    ggml_tensor* tv = nn::linear(c, ta, a + "add_v_proj", dim, dim);
    // Text tokens first, then the image (and reference) tokens.
    ggml_tensor* q = rope(ctx, ggml_concat(ctx, tq, iq, 1), cos, sin, cfg.heads);
    ggml_tensor* k = rope(ctx, ggml_concat(ctx, tk, ik, 1), cos, sin, cfg.heads);
    ggml_tensor* v = ggml_concat(ctx, tv, iv, 1);
    ggml_tensor* o = nn::attention(ctx, q, k, v, static_cast<int>(cfg.heads));
    const int64_t nt = txt->ne[1], ni = img->ne[1];
    ggml_tensor* to = nn::linear(c, nn::token_range(ctx, o, 0, nt), a + "to_add_out", dim, dim);
    ggml_tensor* io = nn::linear(c, nn::token_range(ctx, o, nt, ni), a + "to_out.0", dim, dim);
    img = ggml_add(ctx, img, ggml_mul(ctx, io, im[2]));
    txt = ggml_add(ctx, txt, ggml_mul(ctx, to, tm[2]));

    ggml_tensor* ib = modulate(ctx, ggml_norm(ctx, img, 1e-6f), im[3], im[4]);
    ggml_tensor* tb = modulate(ctx, ggml_norm(ctx, txt, 1e-6f), tm[3], tm[4]);
    img = ggml_add(ctx, img, ggml_mul(ctx, mlp(c, ib, p + "img_mlp.", dim, cfg.mlp), im[5]));
    txt = ggml_add(ctx, txt, ggml_mul(ctx, mlp(c, tb, p + "txt_mlp.", dim, cfg.mlp), tm[5]));
}

// sd.cpp's Rope::rope() angles for one axis: omega_j = 1 / theta^(j * ((D-2)/D) / (D/2-1)),
// moved to a whole number of turns over `wrap` positions when the axis wraps (wrap > 0).
void axis_angles(std::vector<float>& cos_out, std::vector<float>& sin_out, int64_t pairs,
                 int64_t token, int64_t offset, float pos, int dim, float theta, int wrap) {
    const int half = dim / 2;
    const float end = (static_cast<float>(dim) - 2.0f) / static_cast<float>(dim);
    const float step = half > 1 ? end / static_cast<float>(half - 1) : 0.0f;
    for (int j = 0; j < half; ++j) {
        const float omega = 1.0f / std::pow(theta, static_cast<float>(j) * step);
        const float angle = nn::rope_angle(pos, omega, wrap);
        const size_t i = static_cast<size_t>(token * pairs + offset + j);
        cos_out[i] = std::cos(angle);
        sin_out[i] = std::sin(angle);
    }
}

}  // namespace

bool is_qwen_image(const TensorIndex& index, const std::string& prefix) {
    return index.has(prefix + "img_in.weight") && index.has(prefix + "txt_in.weight") &&
           index.has(prefix + "txt_norm.weight") &&
           index.has(prefix + "transformer_blocks.0.attn.add_q_proj.weight");
}

Result<QwenImageConfig> detect_qwen_image(const TensorIndex& index, const std::string& prefix) {
    QwenImageConfig cfg;
    cfg.prefix = prefix;
    auto shape2 = [&](const std::string& name) -> const TensorInfo* {
        const TensorInfo* t = index.find(prefix + name);
        return t && t->shape.size() == 2 ? t : nullptr;
    };
    const TensorInfo* img_in = shape2("img_in.weight");
    const TensorInfo* txt_in = shape2("txt_in.weight");
    const TensorInfo* proj_out = shape2("proj_out.weight");
    const TensorInfo* mlp = shape2("transformer_blocks.0.img_mlp.net.0.proj.weight");
    if (!img_in) return Status::Error("missing tensor " + prefix + "img_in.weight");
    if (!txt_in) return Status::Error("missing tensor " + prefix + "txt_in.weight");
    if (!proj_out) return Status::Error("missing tensor " + prefix + "proj_out.weight");
    if (!mlp) {
        return Status::Error("missing tensor " + prefix +
                             "transformer_blocks.0.img_mlp.net.0.proj.weight");
    }
    cfg.width = img_in->shape[0];
    cfg.text_width = txt_in->shape[1];
    cfg.mlp = mlp->shape[0];
    const int64_t pp = static_cast<int64_t>(cfg.patch) * cfg.patch;
    if (img_in->shape[1] % pp || proj_out->shape[0] != img_in->shape[1]) {
        return Status::Error(
            prefix + "img_in.weight / proj_out.weight: " + std::to_string(img_in->shape[1]) +
            " in and " + std::to_string(proj_out->shape[0]) +
            " out channels are not the same 2x2 patches of a latent");
    }
    cfg.latent_channels = img_in->shape[1] / pp;
    const TensorInfo* nq = index.find(prefix + "transformer_blocks.0.attn.norm_q.weight");
    if (!nq || nq->shape.empty()) {
        return Status::Error("missing tensor " + prefix +
                             "transformer_blocks.0.attn.norm_q.weight");
    }
    cfg.head_dim = nq->shape.back();
    int sum = 0;
    for (int a : cfg.axes_dim) sum += a;
    if (cfg.head_dim != sum || cfg.width % cfg.head_dim) {
        return Status::Error(prefix + "transformer_blocks.0.attn.norm_q.weight: heads of " +
                             std::to_string(cfg.head_dim) + " (the 3-axis RoPE covers " +
                             std::to_string(sum) + ")");
    }
    cfg.heads = cfg.width / cfg.head_dim;
    cfg.layers = 0;
    while (index.has(prefix + "transformer_blocks." + std::to_string(cfg.layers) +
                     ".attn.to_q.weight")) {
        ++cfg.layers;
    }
    cfg.layered = index.has(prefix + "time_text_embed.addition_t_embedding.weight");
    for (const TensorInfo& t : index.tensors()) {
        if (starts_with(t.name, prefix) &&
            t.name.find("__index_timestep_zero__") != std::string::npos) {
            cfg.zero_cond_t = true;
            break;
        }
    }
    return cfg;
}

QwenImageRope qwen_image_rope(const QwenImageConfig& cfg, int64_t frames, int64_t w, int64_t h,
                              int64_t text_tokens, const std::vector<QwenImageRef>& refs,
                              QwenRefIndex ref_index, nn::RopeWrap wrap) {
    struct Id {
        float t, y, x;
        int wrap_y = 0, wrap_x = 0;  // seamless tiling: the grid's rows / columns
    };
    std::vector<Id> ids;
    const int64_t hl = (h + 1) / 2, wl = (w + 1) / 2;
    const float txt_start = static_cast<float>(std::max(hl, wl) / 2);
    for (int64_t j = 0; j < text_tokens; ++j) {
        const float p = txt_start + static_cast<float>(j);
        ids.push_back({p, p, p});
    }
    // Rows and columns start at (y0, x0), or centred on them.
    auto image_ids = [&](float frame, int64_t f_h, int64_t f_w, int64_t y0, int64_t x0,
                         bool centred) {
        if (centred) {
            y0 -= f_h / 2;
            x0 -= f_w / 2;
        }
        const int wy = wrap.y ? static_cast<int>(f_h) : 0;
        const int wx = wrap.x ? static_cast<int>(f_w) : 0;
        for (int64_t y = 0; y < f_h; ++y) {
            for (int64_t x = 0; x < f_w; ++x) {
                ids.push_back(
                    {frame, static_cast<float>(y0 + y), static_cast<float>(x0 + x), wy, wx});
            }
        }
    };
    for (int64_t f = 0; f < frames; ++f) image_ids(static_cast<float>(f), hl, wl, 0, 0, true);
    int index = ref_index == QwenRefIndex::Decrease ? 0 : 1;
    int64_t used_h = 0, used_w = 0;  // Fixed: the extent of the references placed so far
    for (const QwenImageRef& r : refs) {
        int64_t y0 = 0, x0 = 0;
        if (ref_index == QwenRefIndex::Fixed) {
            if (r.h + used_h > r.w + used_w) {
                x0 = used_w;
            } else {
                y0 = used_h;
            }
        } else if (ref_index == QwenRefIndex::Decrease) {
            --index;
        }
        image_ids(static_cast<float>(index), (r.h + 1) / 2, (r.w + 1) / 2, y0, x0,
                  ref_index != QwenRefIndex::Fixed);
        if (ref_index == QwenRefIndex::Increase) ++index;
        used_h = std::max(used_h, r.h + y0);
        used_w = std::max(used_w, r.w + x0);
    }
    QwenImageRope out;
    for (int a : cfg.axes_dim) out.pairs += a / 2;
    out.tokens = static_cast<int64_t>(ids.size());
    out.cos.resize(static_cast<size_t>(out.pairs * out.tokens));
    out.sin.resize(out.cos.size());
    for (int64_t tk = 0; tk < out.tokens; ++tk) {
        const float pos[3] = {ids[tk].t, ids[tk].y, ids[tk].x};
        const int wraps[3] = {0, ids[tk].wrap_y, ids[tk].wrap_x};
        int64_t offset = 0;
        for (size_t a = 0; a < cfg.axes_dim.size() && a < 3; ++a) {
            axis_angles(out.cos, out.sin, out.pairs, tk, offset, pos[a], cfg.axes_dim[a], cfg.theta,
                        wraps[a]);
            offset += cfg.axes_dim[a] / 2;
        }
    }
    return out;
}

ggml_tensor* build_qwen_image(nn::Ctx& c, const QwenImageConfig& cfg, ggml_tensor* x,
                              int64_t frames, ggml_tensor* timesteps, ggml_tensor* context,
                              ggml_tensor* cos, ggml_tensor* sin,
                              const std::vector<ggml_tensor*>& refs) {
    ggml_context* ctx = c.ctx;
    const std::string& p = cfg.prefix;
    const int64_t W = x->ne[0], H = x->ne[1], N = x->ne[3], dim = cfg.width;
    const int64_t pw = W % 2, ph = H % 2;
    // Seamless tiling pads a latent that is not whole patches by wrap-around.
    const KernelChoices k = kernel_choices(ctx);
    auto pad = [&](ggml_tensor* t) {
        return nn::pad_to_patch(ctx, t, 2, k.circular_x, k.circular_y);
    };
    ggml_tensor* tokens = patchify(ctx, pad(x), frames);
    const int64_t n_img = tokens->ne[1];
    for (ggml_tensor* r : refs) {
        ggml_tensor* rt = patchify(ctx, pad(r), 1);
        if (N > 1) {
            rt = ggml_repeat(ctx, rt, ggml_new_tensor_3d(ctx, rt->type, rt->ne[0], rt->ne[1], N));
        }
        tokens = ggml_concat(ctx, tokens, rt, 1);
    }

    const std::string te = p + "time_text_embed.";
    auto embed_time = [&](ggml_tensor* t) {
        ggml_tensor* e = ggml_timestep_embedding(ctx, t, 256, 10000);
        e = nn::linear(c, e, te + "timestep_embedder.linear_1", 256, dim);
        e = nn::linear(c, ggml_silu(ctx, e), te + "timestep_embedder.linear_2", dim, dim);
        if (cfg.layered) {
            // addition_t_cond is 0 for every item: row 0 of the embedding.
            ggml_tensor* w = c.W(te + "addition_t_embedding.weight", {dim, 2});
            ggml_tensor* row = ggml_view_1d(ctx, w, dim, 0);
            if (row->type != GGML_TYPE_F32) row = ggml_cast(ctx, row, GGML_TYPE_F32);
            e = ggml_add(ctx, e, row);
        }
        return e;
    };
    ggml_tensor* temb = embed_time(timesteps);
    // zero_cond_t: the reference tokens see the clean timestep 0.
    ggml_tensor* temb0 =
        cfg.zero_cond_t && !refs.empty() ? embed_time(ggml_scale(ctx, timesteps, 0.0f)) : nullptr;

    ggml_tensor* img = nn::linear(c, tokens, p + "img_in", tokens->ne[0], dim);
    ggml_tensor* txt = rms(c, context, p + "txt_norm.weight", cfg.text_width);
    txt = nn::linear(c, txt, p + "txt_in", cfg.text_width, dim);
    for (int64_t i = 0; i < cfg.layers; ++i) {
        block(c, cfg, p + "transformer_blocks." + std::to_string(i) + ".", img, txt, temb, temb0,
              n_img, cos, sin);
    }
    if (img->ne[1] > n_img) img = nn::token_range(ctx, img, 0, n_img);
    const std::vector<ggml_tensor*> m = modulation(c, temb, p + "norm_out.linear", dim, 2);
    img = modulate(ctx, ggml_norm(ctx, img, 1e-6f), m[1], m[0]);  // (scale, shift)
    img = nn::linear(c, img, p + "proj_out", dim, 4 * cfg.latent_channels);
    return nn::crop_latent(ctx, unpatchify(ctx, img, (W + pw) / 2, (H + ph) / 2, frames), W, H);
}

}  // namespace ggdiff::models
