#include "families/pid/dit.h"

#include <ggml.h>

#include <algorithm>
#include <cmath>

#include "core/log.h"
#include "nn/dit.h"
#include "nn/layers.h"
#include "pipeline/parts/module_setup.h"

namespace ggdiff::models {

namespace {

constexpr float kEps = 1e-6f;

const TensorInfo* need(const TensorIndex& index, const std::string& name, size_t min_rank,
                       Status* st) {
    const TensorInfo* t = index.find(name);
    if (!t || t->shape.size() < min_rank) {
        if (st->ok()) {
            *st = Status::Error(t ? name + " has the wrong shape" : "missing tensor " + name);
        }
        return nullptr;
    }
    return t;
}

ggml_tensor* rms(nn::Ctx& c, ggml_tensor* x, const std::string& name, int64_t dim) {
    return nn::rms_norm(c, x, name, dim, kEps);
}

// x + x * scale + shift (the reference's adaLN, without the 1 + scale folding).
ggml_tensor* adaln(ggml_context* ctx, ggml_tensor* x, ggml_tensor* shift, ggml_tensor* scale) {
    return ggml_add(ctx, ggml_add(ctx, x, ggml_mul(ctx, x, scale)), shift);
}

// Per-head RMSNorm of x [heads*d, T, N] (a view) by the weight `name` [d].
ggml_tensor* head_rms(nn::Ctx& c, ggml_tensor* x, const std::string& name, int64_t d) {
    const int64_t dim = x->ne[0], t = x->ne[1], n = x->ne[2];
    x = ggml_reshape_4d(c.ctx, ggml_cont(c.ctx, x), d, dim / d, t, n);
    x = ggml_mul(c.ctx, ggml_rms_norm(c.ctx, x, kEps), c.W(name, {d}));
    return ggml_reshape_3d(c.ctx, x, dim, t, n);
}

// w2(silu(w1 x) * w3 x), no biases.
ggml_tensor* swiglu(nn::Ctx& c, ggml_tensor* x, const std::string& p, int64_t dim, int64_t hidden) {
    ggml_tensor* gate = ggml_silu(c.ctx, nn::linear(c, x, p + "w1", dim, hidden, false));
    ggml_tensor* up = nn::linear(c, x, p + "w3", dim, hidden, false);
    return nn::linear(c, ggml_mul(c.ctx, gate, up), p + "w2", hidden, dim, false);
}

struct Qkv {
    ggml_tensor *q, *k, *v;
};

// The fused qkv linear `linear` (no bias) of x [dim, T, N], q and k normalized per head.
Qkv project(nn::Ctx& c, ggml_tensor* x, const std::string& linear, const std::string& qn,
            const std::string& kn, int64_t dim, int64_t d) {
    ggml_tensor* y = nn::linear(c, x, linear, dim, 3 * dim, false);
    Qkv r;
    r.q = head_rms(c, nn::feature_rows(c.ctx, y, 0, dim), qn, d);
    r.k = head_rms(c, nn::feature_rows(c.ctx, y, dim, dim), kn, d);
    r.v = ggml_cont(c.ctx, nn::feature_rows(c.ctx, y, 2 * dim, dim));
    return r;
}

// Image [W, H, C, N] -> tokens [C, p*p, (W/p)*(H/p)*N]: each patch's pixels (row-major in the
// patch), each pixel's channels fastest.
ggml_tensor* pixels_of_patches(ggml_context* ctx, ggml_tensor* x, int p) {
    const int64_t C = x->ne[2];
    ggml_tensor* t = nn::patchify(ctx, x, p);  // [C*p*p, L, N], channel-major
    const int64_t L = t->ne[1], N = t->ne[2];
    t = ggml_reshape_4d(ctx, t, p * p, C, L, N);
    t = ggml_cont(ctx, ggml_permute(ctx, t, 1, 0, 2, 3));  // [C, p*p, L, N]
    return ggml_reshape_3d(ctx, t, C, p * p, L * N);
}

// Tokens [C*p*p, L, N] with each pixel's channels fastest -> image [w*p, h*p, C, N].
ggml_tensor* image_of_patches(ggml_context* ctx, ggml_tensor* x, int64_t w, int64_t h, int p) {
    const int64_t C = x->ne[0] / (p * p), T = x->ne[1], N = x->ne[2];
    x = ggml_cont(ctx, ggml_permute(ctx, ggml_reshape_4d(ctx, x, C, p * p, T, N), 1, 0, 2, 3));
    return nn::unpatchify(ctx, ggml_reshape_3d(ctx, x, p * p * C, T, N), w, h, p);
}

// The reference's Rope::rope angle table: pair j of `dim` turns at theta^(-2j/dim) (float).
std::vector<float> omegas(int64_t dim, float theta) {
    const int64_t half = dim / 2;
    std::vector<float> w(static_cast<size_t>(half));
    const float end = (static_cast<float>(dim) - 2.0f) / static_cast<float>(dim);
    const float step = half > 1 ? end / static_cast<float>(half - 1) : 0.0f;
    for (int64_t j = 0; j < half; ++j) {
        const float scale = static_cast<float>(j) * step;
        w[static_cast<size_t>(j)] = 1.0f / std::pow(theta, scale);
    }
    return w;
}

ggml_tensor* patch_block(nn::Ctx& c, const PidConfig& cfg, int64_t i, ggml_tensor*& x,
                         ggml_tensor*& y, ggml_tensor* t_emb, ggml_tensor* cos, ggml_tensor* sin) {
    ggml_context* ctx = c.ctx;
    const std::string p = cfg.prefix + "patch_blocks." + std::to_string(i) + ".";
    const int64_t h = cfg.hidden, d = cfg.head_dim(), nx = x->ne[1], ny = y->ne[1];
    const std::vector<ggml_tensor*> mx =
        nn::modulation(c, t_emb, p + "adaLN_modulation_img.0", h, 6);
    const std::vector<ggml_tensor*> my =
        nn::modulation(c, t_emb, p + "adaLN_modulation_txt.0", h, 6);
    ggml_tensor* xn = adaln(ctx, rms(c, x, p + "norm_x1.weight", h), mx[0], mx[1]);
    ggml_tensor* yn = adaln(ctx, rms(c, y, p + "norm_y1.weight", h), my[0], my[1]);
    const std::string a = p + "attn.";
    const Qkv qx = project(c, xn, a + "qkv_x", a + "q_norm_x.weight", a + "k_norm_x.weight", h, d);
    const Qkv qy = project(c, yn, a + "qkv_y", a + "q_norm_y.weight", a + "k_norm_y.weight", h, d);
    ggml_tensor* q = ggml_concat(ctx, qy.q, qx.q, 1);
    ggml_tensor* k = ggml_concat(ctx, qy.k, qx.k, 1);
    ggml_tensor* v = ggml_concat(ctx, qy.v, qx.v, 1);
    const int heads = static_cast<int>(cfg.heads);
    ggml_tensor* o = nn::rope_attention(ctx, q, k, v, cos, sin, heads);
    ggml_tensor* oy = nn::linear(c, nn::token_range(ctx, o, 0, ny), a + "proj_y", h, h);
    ggml_tensor* ox = nn::linear(c, nn::token_range(ctx, o, ny, nx), a + "proj_x", h, h);
    x = ggml_add(ctx, x, ggml_mul(ctx, ox, mx[2]));
    y = ggml_add(ctx, y, ggml_mul(ctx, oy, my[2]));
    ggml_tensor* fx = swiglu(c, adaln(ctx, rms(c, x, p + "norm_x2.weight", h), mx[3], mx[4]),
                             p + "mlp_x.", h, cfg.mlp);
    ggml_tensor* fy = swiglu(c, adaln(ctx, rms(c, y, p + "norm_y2.weight", h), my[3], my[4]),
                             p + "mlp_y.", h, cfg.mlp);
    x = ggml_add(ctx, x, ggml_mul(ctx, fx, mx[5]));
    y = ggml_add(ctx, y, ggml_mul(ctx, fy, my[5]));
    return x;
}

// The source latent's features for the gates: one [hidden, gw*gh, 1] per output head.
std::vector<ggml_tensor*> lq_features(nn::Ctx& c, const PidConfig& cfg, ggml_tensor* lq, int64_t gw,
                                      int64_t gh) {
    ggml_context* ctx = c.ctx;
    const std::string p = cfg.prefix + "lq_proj.";
    if (lq->ne[0] != gw || lq->ne[1] != gh) lq = nn::upsample_nearest(ctx, lq, gw, gh);
    const int64_t ch = cfg.lq_hidden;
    ggml_tensor* f = nn::conv2d(c, lq, p + "latent_proj.0", cfg.lq_channels, ch, 3, 1, 1);
    f = nn::conv2d(c, ggml_silu(ctx, f), p + "latent_proj.2", ch, ch, 3, 1, 1);
    for (int64_t i = 0; i < cfg.lq_res_blocks; ++i) {
        const std::string b = p + "latent_proj." + std::to_string(3 + i) + ".block.";
        ggml_tensor* r = ggml_silu(ctx, nn::group_norm(c, f, b + "0", ch, 4, 1e-5f));
        r = nn::conv2d(c, r, b + "2", ch, ch, 3, 1, 1);
        r = ggml_silu(ctx, nn::group_norm(c, r, b + "3", ch, 4, 1e-5f));
        f = ggml_add(ctx, f, nn::conv2d(c, r, b + "5", ch, ch, 3, 1, 1));
    }
    ggml_tensor* tokens = nn::image_to_tokens(ctx, f);
    std::vector<ggml_tensor*> out;
    for (int64_t i = 0; i < cfg.lq_outputs; ++i) {
        out.push_back(
            nn::linear(c, tokens, p + "output_heads." + std::to_string(i), ch, cfg.hidden));
    }
    return out;
}

ggml_tensor* pixel_block(nn::Ctx& c, const PidConfig& cfg, int64_t i, ggml_tensor* x,
                         ggml_tensor* s_cond, int64_t tokens, int64_t n, ggml_tensor* cos,
                         ggml_tensor* sin) {
    ggml_context* ctx = c.ctx;
    const std::string p = cfg.prefix + "pixel_blocks." + std::to_string(i) + ".";
    const int64_t ph = cfg.pixel_hidden, p2 = int64_t(cfg.patch) * cfg.patch, a = cfg.pixel_attn;
    const int64_t bl = tokens * n;
    ggml_tensor* m = nn::linear(c, s_cond, p + "adaLN_modulation.0", cfg.hidden, 6 * ph * p2);
    m = ggml_reshape_3d(ctx, m, 6 * ph, p2, bl);
    std::vector<ggml_tensor*> mod;
    for (int k = 0; k < 6; ++k) mod.push_back(nn::feature_rows(ctx, m, k * ph, ph));
    ggml_tensor* xn = adaln(ctx, rms(c, x, p + "norm1.weight", ph), mod[0], mod[1]);
    ggml_tensor* comp = nn::linear(c, ggml_reshape_2d(ctx, ggml_cont(ctx, xn), p2 * ph, bl),
                                   p + "compress_to_attn", p2 * ph, a);
    comp = ggml_reshape_3d(ctx, comp, a, tokens, n);
    const Qkv qkv = project(c, comp, p + "attn.qkv", p + "attn.q_norm.weight",
                            p + "attn.k_norm.weight", a, cfg.pixel_head_dim());
    ggml_tensor* o =
        nn::rope_attention(ctx, qkv.q, qkv.k, qkv.v, cos, sin, static_cast<int>(cfg.pixel_heads));
    o = nn::linear(c, o, p + "attn.proj", a, a);
    ggml_tensor* e =
        nn::linear(c, ggml_reshape_2d(ctx, o, a, bl), p + "expand_from_attn", a, p2 * ph);
    x = ggml_add(ctx, x, ggml_mul(ctx, ggml_reshape_3d(ctx, e, ph, p2, bl), mod[2]));
    ggml_tensor* hdn = adaln(ctx, rms(c, x, p + "norm2.weight", ph), mod[3], mod[4]);
    hdn = ggml_gelu(ctx, nn::linear(c, hdn, p + "mlp.fc1", ph, 4 * ph));
    hdn = nn::linear(c, hdn, p + "mlp.fc2", 4 * ph, ph);
    return ggml_add(ctx, x, ggml_mul(ctx, hdn, mod[5]));
}

}  // namespace

bool is_pid(const TensorIndex& index, const std::string& prefix) {
    return index.has(prefix + "lq_proj.latent_proj.0.weight");
}

Result<PidConfig> detect_pid(const TensorIndex& index, const std::string& prefix) {
    PidConfig cfg;
    cfg.prefix = prefix;
    Status st = Status::Ok();
    const TensorInfo* s = need(index, prefix + "s_embedder.proj.weight", 2, &st);
    const TensorInfo* qn = need(index, prefix + "patch_blocks.0.attn.q_norm_x.weight", 1, &st);
    const TensorInfo* w1 = need(index, prefix + "patch_blocks.0.mlp_x.w1.weight", 2, &st);
    const TensorInfo* pe = need(index, prefix + "pixel_embedder.proj.weight", 2, &st);
    const TensorInfo* ca = need(index, prefix + "pixel_blocks.0.compress_to_attn.weight", 2, &st);
    const TensorInfo* pqn = need(index, prefix + "pixel_blocks.0.attn.q_norm.weight", 1, &st);
    const TensorInfo* ye = need(index, prefix + "y_embedder.proj.weight", 2, &st);
    const TensorInfo* yp = need(index, prefix + "y_pos_embedding", 2, &st);
    const TensorInfo* lq = need(index, prefix + "lq_proj.latent_proj.0.weight", 4, &st);
    if (!st.ok()) return st;
    cfg.hidden = s->shape[0];
    cfg.pixel_hidden = pe->shape[0];
    cfg.channels = pe->shape[1];
    const int64_t p2 = s->shape[1] / std::max<int64_t>(1, cfg.channels);
    cfg.patch = static_cast<int>(std::lround(std::sqrt(static_cast<double>(p2))));
    if (int64_t(cfg.patch) * cfg.patch * cfg.channels != s->shape[1]) {
        return Status::Error(string_format(
            "%ss_embedder.proj.weight reads %lld features, not %lld channels of a square patch",
            prefix.c_str(), (long long)s->shape[1], (long long)cfg.channels));
    }
    const int64_t d = qn->shape[0], pd = pqn->shape[0];
    cfg.pixel_attn = ca->shape[0];
    if (d <= 0 || cfg.hidden % d || d % 4 || pd <= 0 || cfg.pixel_attn % pd || pd % 4) {
        return Status::Error(string_format(
            "%s: heads of %lld (patch level, %lld wide) and %lld (pixel level, %lld wide) do not "
            "divide the widths into heads of a multiple of 4",
            prefix.c_str(), (long long)d, (long long)cfg.hidden, (long long)pd,
            (long long)cfg.pixel_attn));
    }
    cfg.heads = cfg.hidden / d;
    cfg.pixel_heads = cfg.pixel_attn / pd;
    cfg.mlp = w1->shape[0];
    cfg.text_width = ye->shape[1];
    cfg.text_max = yp->shape[yp->shape.size() - 2];
    cfg.lq_hidden = lq->shape[0];
    cfg.lq_channels = lq->shape[1];
    cfg.patch_depth = 0;
    while (index.has(prefix + "patch_blocks." + std::to_string(cfg.patch_depth) +
                     ".attn.qkv_x.weight")) {
        ++cfg.patch_depth;
    }
    cfg.pixel_depth = 0;
    while (index.has(prefix + "pixel_blocks." + std::to_string(cfg.pixel_depth) +
                     ".compress_to_attn.weight")) {
        ++cfg.pixel_depth;
    }
    cfg.lq_res_blocks = 0;
    while (index.has(prefix + "lq_proj.latent_proj." + std::to_string(3 + cfg.lq_res_blocks) +
                     ".block.0.weight")) {
        ++cfg.lq_res_blocks;
    }
    cfg.lq_outputs = 0;
    while (
        index.has(prefix + "lq_proj.output_heads." + std::to_string(cfg.lq_outputs) + ".weight")) {
        ++cfg.lq_outputs;
    }
    const int64_t gates = (cfg.patch_depth + cfg.lq_interval - 1) / cfg.lq_interval;
    if (cfg.lq_outputs != gates) {
        return Status::Error(string_format(
            "%slq_proj: %lld output heads for %lld patch blocks (one per %lld blocks: %lld)",
            prefix.c_str(), (long long)cfg.lq_outputs, (long long)cfg.patch_depth,
            (long long)cfg.lq_interval, (long long)gates));
    }
    return cfg;
}

PidRope pid_grid_rope(const PidConfig& cfg, int64_t gh, int64_t gw, int64_t d) {
    const int64_t axis = d / 2, pairs = d / 2, n = gh * gw;
    float h_ntk = 1.0f, w_ntk = 1.0f;
    if (axis > 2) {
        const float power = static_cast<float>(axis) / static_cast<float>(axis - 2);
        h_ntk = std::pow(static_cast<float>(gh) / static_cast<float>(cfg.rope_ref_grid), power);
        w_ntk = std::pow(static_cast<float>(gw) / static_cast<float>(cfg.rope_ref_grid), power);
    }
    const std::vector<float> wx = omegas(axis, 10000.0f * w_ntk);
    const std::vector<float> wy = omegas(axis, 10000.0f * h_ntk);
    PidRope r{HostTensor({1, pairs, 1, n}), HostTensor({1, pairs, 1, n})};
    for (int64_t iy = 0; iy < gh; ++iy) {
        const float y =
            gh == 1 ? 0.0f : 16.0f * static_cast<float>(iy) / static_cast<float>(gh - 1);
        for (int64_t ix = 0; ix < gw; ++ix) {
            const float x =
                gw == 1 ? 0.0f : 16.0f * static_cast<float>(ix) / static_cast<float>(gw - 1);
            const int64_t t = iy * gw + ix;
            for (int64_t i = 0; i < axis / 2; ++i) {
                const float ax = x * wx[static_cast<size_t>(i)];
                const float ay = y * wy[static_cast<size_t>(i)];
                r.cos.data[static_cast<size_t>(t * pairs + 2 * i)] = std::cos(ax);
                r.sin.data[static_cast<size_t>(t * pairs + 2 * i)] = std::sin(ax);
                r.cos.data[static_cast<size_t>(t * pairs + 2 * i + 1)] = std::cos(ay);
                r.sin.data[static_cast<size_t>(t * pairs + 2 * i + 1)] = std::sin(ay);
            }
        }
    }
    return r;
}

PidRope pid_text_rope(int64_t tokens, int64_t d) {
    const int64_t pairs = d / 2;
    const std::vector<float> w = omegas(d, 10000.0f);
    PidRope r{HostTensor({1, pairs, 1, tokens}), HostTensor({1, pairs, 1, tokens})};
    for (int64_t t = 0; t < tokens; ++t) {
        for (int64_t j = 0; j < pairs; ++j) {
            const float a = static_cast<float>(t) * w[static_cast<size_t>(j)];
            r.cos.data[static_cast<size_t>(t * pairs + j)] = std::cos(a);
            r.sin.data[static_cast<size_t>(t * pairs + j)] = std::sin(a);
        }
    }
    return r;
}

HostTensor pid_time_features(const std::vector<float>& t) {
    // The reference's ggml_timestep_embedding(t, 256, max_period 10): cos half first.
    const int64_t dim = 256, half = dim / 2;
    HostTensor out({dim, static_cast<int64_t>(t.size())});
    for (size_t i = 0; i < t.size(); ++i) {
        for (int64_t j = 0; j < half; ++j) {
            const float freq = std::exp(-std::log(10.0f) * static_cast<float>(j) / half);
            const float arg = t[i] * freq;
            out.data[i * dim + j] = std::cos(arg);
            out.data[i * dim + j + half] = std::sin(arg);
        }
    }
    return out;
}

PidRope pid_concat(const PidRope& a, const PidRope& b) {
    const int64_t pairs = a.cos.dim(1), n = a.cos.dim(3) + b.cos.dim(3);
    PidRope r{HostTensor({1, pairs, 1, n}), HostTensor({1, pairs, 1, n})};
    std::copy(a.cos.data.begin(), a.cos.data.end(), r.cos.data.begin());
    std::copy(b.cos.data.begin(), b.cos.data.end(), r.cos.data.begin() + a.cos.numel());
    std::copy(a.sin.data.begin(), a.sin.data.end(), r.sin.data.begin());
    std::copy(b.sin.data.begin(), b.sin.data.end(), r.sin.data.begin() + a.sin.numel());
    return r;
}

HostTensor pid_pixel_pos(const PidConfig& cfg, int64_t w, int64_t h) {
    // Per pixel: sin-cos features of its column (first half), then of its row (second half),
    // each sin first (the reference's timestep_embedding without the cos flip).
    const int64_t dim = cfg.pixel_hidden, half = dim / 2, q = half / 2;
    HostTensor out({dim, w * h});
    std::vector<float> freqs(static_cast<size_t>(q));
    for (int64_t j = 0; j < q; ++j) {
        freqs[static_cast<size_t>(j)] = static_cast<float>(
            std::exp(-std::log(10000.0) * static_cast<double>(j) / static_cast<double>(q)));
    }
    for (int64_t iy = 0; iy < h; ++iy) {
        for (int64_t ix = 0; ix < w; ++ix) {
            float* o = out.data.data() + (iy * w + ix) * dim;
            for (int64_t j = 0; j < q; ++j) {
                const float ax = static_cast<float>(ix) * freqs[static_cast<size_t>(j)];
                const float ay = static_cast<float>(iy) * freqs[static_cast<size_t>(j)];
                o[j] = std::sin(ax);
                o[j + q] = std::cos(ax);
                o[half + j] = std::sin(ay);
                o[half + j + q] = std::cos(ay);
            }
        }
    }
    return out;
}

ggml_tensor* build_pid_patch_block(nn::Ctx& c, const PidConfig& cfg, int64_t index, ggml_tensor* s,
                                   ggml_tensor* y, ggml_tensor* cond, ggml_tensor* cos,
                                   ggml_tensor* sin) {
    return patch_block(c, cfg, index, s, y, cond, cos, sin);
}

ggml_tensor* build_pid(nn::Ctx& c, const PidConfig& cfg, const PidInputs& in) {
    ggml_context* ctx = c.ctx;
    const std::string& P = cfg.prefix;
    const int p = cfg.patch;
    const int64_t w0 = in.x->ne[0], h0 = in.x->ne[1], n = in.x->ne[3];
    ggml_tensor* x = nn::pad_to_patch(ctx, in.x, p);
    const int64_t w = x->ne[0], h = x->ne[1], gw = w / p, gh = h / p, L = gw * gh;
    const int64_t hid = cfg.hidden;

    ggml_tensor* t = nn::linear(c, in.t, P + "t_embedder.mlp.0", 256, hid);
    ggml_tensor* t_emb = nn::linear(c, ggml_silu(ctx, t), P + "t_embedder.mlp.2", hid, hid);

    const int64_t lt = std::min<int64_t>(in.context->ne[1], cfg.text_max);
    ggml_tensor* y = nn::token_range(ctx, in.context, 0, lt);
    y = rms(c, nn::linear(c, y, P + "y_embedder.proj", cfg.text_width, hid),
            P + "y_embedder.norm.weight", hid);
    ggml_tensor* ypos = c.W(P + "y_pos_embedding", {hid, cfg.text_max, 1});
    ggml_tensor* yp = ggml_view_2d(ctx, ypos, hid, lt, ypos->nb[1], 0);
    if (yp->type != GGML_TYPE_F32) yp = ggml_cast(ctx, yp, GGML_TYPE_F32);
    y = ggml_add(ctx, y, yp);

    const std::vector<ggml_tensor*> lq = lq_features(c, cfg, in.lq, gw, gh);
    ggml_tensor* s =
        nn::linear(c, nn::patchify(ctx, x, p), P + "s_embedder.proj", cfg.channels * p * p, hid);
    for (int64_t i = 0; i < cfg.patch_depth; ++i) {
        const int64_t g = i / cfg.lq_interval;
        if (i % cfg.lq_interval == 0 && g < static_cast<int64_t>(lq.size())) {
            ggml_tensor* f = lq[static_cast<size_t>(g)];
            if (n > 1) f = ggml_repeat(ctx, f, s);
            ggml_tensor* logit = nn::linear(
                c, ggml_concat(ctx, s, f, 0),
                P + "lq_proj.gate_modules." + std::to_string(g) + ".content_proj", 2 * hid, hid);
            // The sigma offset exp(log_alpha) * degrade_sigma is 0: degrade_sigma is 0.
            s = ggml_add(ctx, s, ggml_mul(ctx, ggml_sigmoid(ctx, logit), f));
        }
        patch_block(c, cfg, i, s, y, t_emb, in.joint_cos, in.joint_sin);
    }
    s = ggml_silu(ctx, ggml_add(ctx, s, ggml_reshape_3d(ctx, t_emb, hid, 1, n)));
    ggml_tensor* s_cond = ggml_reshape_2d(ctx, s, hid, L * n);

    // Every pixel embedded, then grouped by patch.
    ggml_tensor* px = nn::linear(c, nn::image_to_tokens(ctx, x), P + "pixel_embedder.proj",
                                 cfg.channels, cfg.pixel_hidden);
    px = ggml_add(ctx, px, in.pixel_pos);
    px = pixels_of_patches(ctx, nn::tokens_to_image(ctx, px, w, h), p);
    for (int64_t i = 0; i < cfg.pixel_depth; ++i) {
        px = pixel_block(c, cfg, i, px, s_cond, L, n, in.grid_cos, in.grid_sin);
    }
    px = rms(c, px, P + "final_layer.norm.weight", cfg.pixel_hidden);
    px = nn::linear(c, px, P + "final_layer.linear", cfg.pixel_hidden, cfg.channels);
    px = ggml_reshape_3d(ctx, px, cfg.channels * p * p, L, n);
    return nn::crop_latent(ctx, image_of_patches(ctx, px, gw, gh, p), w0, h0);
}

}  // namespace ggdiff::models

namespace ggdiff {

namespace {

struct PidGraphInputs {
    models::PidRope joint, grid;
    HostTensor pixel_pos;
};

PidGraphInputs graph_inputs(const models::PidConfig& cfg, int64_t w, int64_t h, int64_t text) {
    const int p = cfg.patch;
    const int64_t pw = (w + p - 1) / p * p, ph = (h + p - 1) / p * p;
    PidGraphInputs g;
    g.joint =
        models::pid_concat(models::pid_text_rope(std::min(text, cfg.text_max), cfg.head_dim()),
                           models::pid_grid_rope(cfg, ph / p, pw / p, cfg.head_dim()));
    g.grid = models::pid_grid_rope(cfg, ph / p, pw / p, cfg.pixel_head_dim());
    g.pixel_pos = models::pid_pixel_pos(cfg, pw, ph);
    return g;
}

ggml_tensor* build(GraphBuilder& gb, const models::PidConfig& cfg, const HostTensor& x,
                   const HostTensor& t, const HostTensor& context, const HostTensor& lq,
                   const PidGraphInputs& g) {
    models::PidInputs in;
    in.x = gb.input(x);
    in.t = gb.input(t);
    in.context = gb.input(context);
    in.lq = gb.input(lq);
    in.joint_cos = gb.input(g.joint.cos);
    in.joint_sin = gb.input(g.joint.sin);
    in.grid_cos = gb.input(g.grid.cos);
    in.grid_sin = gb.input(g.grid.sin);
    in.pixel_pos = gb.input(g.pixel_pos);
    return models::build_pid(gb.nn(), cfg, in);
}

}  // namespace

Result<std::unique_ptr<PidDenoiser>> PidDenoiser::create(const FamilyContext& ctx,
                                                         const ModuleDevices& where,
                                                         const models::PidConfig& cfg) {
    auto d = std::unique_ptr<PidDenoiser>(new PidDenoiser());
    d->cfg_ = cfg;
    // A representative graph (one patch, two text tokens) declares every weight.
    auto runner = make_module(ctx, where, "PiD DiT", [&cfg](GraphBuilder& gb) {
        const int64_t s = cfg.patch, l = 2;
        const HostTensor t = models::pid_time_features({500.0f});
        const PidGraphInputs g = graph_inputs(cfg, s, s, l);
        const HostTensor x({s, s, cfg.channels, 1}), ctx_in({cfg.text_width, l, 1}),
            lq({1, 1, cfg.lq_channels, 1});
        return std::vector<ggml_tensor*>{build(gb, cfg, x, t, ctx_in, lq, g)};
    });
    if (!runner.ok()) return runner.status();
    d->runner_ = std::move(*runner);
    return d;
}

Result<HostTensor> PidDenoiser::run(const DenoiseBatch& b) {
    const int64_t w = b.x.dim(0), h = b.x.dim(1), c = b.x.dim(2), n = b.x.dim(3);
    if (static_cast<int64_t>(b.cond.size()) != n) {
        return Status::Error(string_format("PiD: batch of %lld images with %zu prompts",
                                           (long long)n, b.cond.size()));
    }
    if (c != cfg_.channels) {
        return Status::Error(string_format("PiD: image of %lld channels, the DiT takes %lld",
                                           (long long)c, (long long)cfg_.channels));
    }
    if (!b.refs || b.refs->empty()) {
        return Status::Error("PiD needs a reference image (-r): the latent it decodes");
    }
    const HostTensor& lq = b.refs->front();
    if (lq.dim(2) != cfg_.lq_channels) {
        return Status::Error(string_format(
            "PiD: the reference image's latent has %lld channels; this PiD model reads %lld "
            "(--vae-format and --vae must match the checkpoint: flux or sd3 for 16, flux2 for 128)",
            (long long)lq.dim(2), (long long)cfg_.lq_channels));
    }
    const int64_t tokens = b.cond[0]->context.dim(1);
    HostTensor context({cfg_.text_width, tokens, n});
    for (int64_t i = 0; i < n; ++i) {
        const Conditioning& cond = *b.cond[static_cast<size_t>(i)];
        if (cond.context.dim(0) != cfg_.text_width || cond.context.dim(1) != tokens) {
            return Status::Error(string_format(
                "PiD: prompt states [%lld, %lld]; the DiT reads %lld-wide Gemma states of one "
                "length",
                (long long)cond.context.dim(0), (long long)cond.context.dim(1),
                (long long)cfg_.text_width));
        }
        std::copy(cond.context.data.begin(), cond.context.data.end(),
                  context.data.begin() + i * cfg_.text_width * tokens);
    }
    const PidGraphInputs g = graph_inputs(cfg_, w, h, tokens);
    HostTensor lq1 = lq;
    lq1.ne = {lq.dim(0), lq.dim(1), lq.dim(2), 1};
    const HostTensor tf = models::pid_time_features(b.timesteps);
    auto r = runner_->run([&](GraphBuilder& gb) {
        return std::vector<ggml_tensor*>{build(gb, cfg_, b.x, tf, context, lq1, g)};
    });
    if (!r.ok()) return r.status();
    HostTensor out = std::move((*r)[0]);
    out.ne = b.x.ne;
    return out;
}

}  // namespace ggdiff
