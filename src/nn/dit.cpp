#include "nn/dit.h"

#include <cmath>

#include "nn/layers.h"

namespace ggdiff::nn {

ggml_tensor* layer_norm_plain(ggml_context* ctx, ggml_tensor* x, float eps) {
    return ggml_norm(ctx, x, eps);
}

ggml_tensor* rms_norm(Ctx& c, ggml_tensor* x, const std::string& name, int64_t dim, float eps) {
    return ggml_mul(c.ctx, ggml_rms_norm(c.ctx, x, eps), c.W(name, {dim}));
}

std::vector<ggml_tensor*> modulation(Ctx& c, ggml_tensor* vec, const std::string& prefix,
                                     int64_t dim, int chunks, bool bias) {
    ggml_tensor* m = linear(c, ggml_silu(c.ctx, vec), prefix, vec->ne[0], chunks * dim, bias);
    const int64_t n = m->ne[1];
    const size_t es = ggml_element_size(m);
    std::vector<ggml_tensor*> out;
    for (int k = 0; k < chunks; ++k) {
        ggml_tensor* v = ggml_view_3d(c.ctx, m, dim, 1, n, m->nb[1], m->nb[1], k * dim * es);
        out.push_back(ggml_cont(c.ctx, v));
    }
    return out;
}

ggml_tensor* pad_to_patch(ggml_context* ctx, ggml_tensor* x, int p, bool wrap_x, bool wrap_y) {
    const int pad_w = static_cast<int>((p - x->ne[0] % p) % p);
    const int pad_h = static_cast<int>((p - x->ne[1] % p) % p);
    if (!pad_w && !pad_h) return x;
    if (wrap_x || wrap_y) return pad_wrap(ctx, x, 0, pad_w, 0, pad_h, wrap_x, wrap_y);
    return ggml_pad(ctx, x, pad_w, pad_h, 0, 0);
}

ggml_tensor* crop_latent(ggml_context* ctx, ggml_tensor* x, int64_t w, int64_t h) {
    if (x->ne[0] == w && x->ne[1] == h) return x;
    return ggml_cont(
        ctx, ggml_view_4d(ctx, x, w, h, x->ne[2], x->ne[3], x->nb[1], x->nb[2], x->nb[3], 0));
}

ggml_tensor* feature_rows(ggml_context* ctx, ggml_tensor* x, int64_t first, int64_t count) {
    return ggml_view_3d(ctx, x, count, x->ne[1], x->ne[2], x->nb[1], x->nb[2],
                        first * ggml_element_size(x));
}

ggml_tensor* token_range(ggml_context* ctx, ggml_tensor* x, int64_t from, int64_t count) {
    return ggml_cont(
        ctx, ggml_view_3d(ctx, x, x->ne[0], count, x->ne[2], x->nb[1], x->nb[2], from * x->nb[1]));
}

ggml_tensor* modulate(ggml_context* ctx, ggml_tensor* x, ggml_tensor* shift, ggml_tensor* scale) {
    x = ggml_add(ctx, x, ggml_mul(ctx, x, scale));
    return ggml_add(ctx, x, shift);
}

ggml_tensor* patchify(ggml_context* ctx, ggml_tensor* x, int p) {
    const int64_t W = x->ne[0], H = x->ne[1], C = x->ne[2], N = x->ne[3];
    const int64_t w = W / p, h = H / p;
    // [pw, w, ph, h*C*N] -> [pw, ph, w, h*C*N]
    x = ggml_reshape_4d(ctx, x, p, w, p, h * C * N);
    x = ggml_cont(ctx, ggml_permute(ctx, x, 0, 2, 1, 3));
    // [p*p, w*h, C, N] -> [p*p, C, w*h, N]
    x = ggml_reshape_4d(ctx, x, p * p, w * h, C, N);
    x = ggml_cont(ctx, ggml_permute(ctx, x, 0, 2, 1, 3));
    return ggml_reshape_3d(ctx, x, p * p * C, w * h, N);
}

ggml_tensor* unpatchify(ggml_context* ctx, ggml_tensor* x, int64_t w, int64_t h, int p) {
    const int64_t N = x->ne[2];
    const int64_t C = x->ne[0] / (p * p);
    // [p*p, C, w*h, N] -> [p*p, w*h, C, N]
    x = ggml_reshape_4d(ctx, x, p * p, C, w * h, N);
    x = ggml_cont(ctx, ggml_permute(ctx, x, 0, 2, 1, 3));
    // [pw, ph, w, h*C*N] -> [pw, w, ph, h*C*N]
    x = ggml_reshape_4d(ctx, x, p, p, w, h * C * N);
    x = ggml_cont(ctx, ggml_permute(ctx, x, 0, 2, 1, 3));
    return ggml_reshape_4d(ctx, x, w * p, h * p, C, N);
}

ggml_tensor* rope_pairs(ggml_context* ctx, ggml_tensor* x, ggml_tensor* cos, ggml_tensor* sin,
                        int heads) {
    const int64_t dim = x->ne[0], t = x->ne[1], n = x->ne[2];
    const int64_t d = dim / heads;
    if (!ggml_is_contiguous(x)) x = ggml_cont(ctx, x);
    const size_t es = ggml_element_size(x);
    // Even and odd members of each pair: [1, d/2, heads, T*N] views.
    ggml_tensor* x0 = ggml_view_4d(ctx, x, 1, d / 2, heads, t * n, 2 * es, d * es, dim * es, 0);
    ggml_tensor* x1 = ggml_view_4d(ctx, x, 1, d / 2, heads, t * n, 2 * es, d * es, dim * es, es);
    ggml_tensor* r0 = ggml_sub(ctx, ggml_mul(ctx, x0, cos), ggml_mul(ctx, x1, sin));
    ggml_tensor* r1 = ggml_add(ctx, ggml_mul(ctx, x0, sin), ggml_mul(ctx, x1, cos));
    ggml_tensor* r = ggml_concat(ctx, r0, r1, 0);  // [2, d/2, heads, T*N]
    return ggml_reshape_3d(ctx, r, dim, t, n);
}

ggml_tensor* rope_halves(ggml_context* ctx, ggml_tensor* x, ggml_tensor* cos, ggml_tensor* sin,
                         int heads) {
    const int64_t dim = x->ne[0], t = x->ne[1], n = x->ne[2];
    const int64_t d = dim / heads;
    if (!ggml_is_contiguous(x)) x = ggml_cont(ctx, x);
    const size_t e = ggml_element_size(x);
    // The first and second halves of each head: [d/2, heads, T, N] views.
    ggml_tensor* x0 = ggml_view_4d(ctx, x, d / 2, heads, t, n, d * e, dim * e, dim * t * e, 0);
    ggml_tensor* x1 =
        ggml_view_4d(ctx, x, d / 2, heads, t, n, d * e, dim * e, dim * t * e, (d / 2) * e);
    ggml_tensor* r0 = ggml_sub(ctx, ggml_mul(ctx, x0, cos), ggml_mul(ctx, x1, sin));
    ggml_tensor* r1 = ggml_add(ctx, ggml_mul(ctx, x0, sin), ggml_mul(ctx, x1, cos));
    return ggml_reshape_3d(ctx, ggml_concat(ctx, r0, r1, 0), dim, t, n);
}

float rope_angle(float pos, float omega, int wrap) {
    if (wrap <= 0) return pos * omega;
    constexpr float kTwoPi = 6.28318530717958647692f;
    const float turns = std::round(omega * static_cast<float>(wrap) / kTwoPi);
    return pos * kTwoPi * turns / static_cast<float>(wrap);
}

void wrap_grid(std::vector<int>& lengths, size_t axes, int64_t first, int64_t h, int64_t w,
               RopeWrap wrap, size_t axis_y, size_t axis_x) {
    if (!wrap.any() || h <= 0 || w <= 0) return;
    const size_t end = static_cast<size_t>(first + h * w) * axes;
    if (lengths.size() < end) lengths.resize(end, 0);
    for (int64_t t = first; t < first + h * w; ++t) {
        int* row = lengths.data() + static_cast<size_t>(t) * axes;
        if (wrap.y) row[axis_y] = static_cast<int>(h);
        if (wrap.x) row[axis_x] = static_cast<int>(w);
    }
}

RopeTable rope_table(const std::vector<float>& ids, const std::vector<int>& axes_dim, float theta,
                     const std::vector<int>& wrap) {
    RopeTable tab;
    const size_t axes = axes_dim.size();
    for (int a : axes_dim) tab.pairs += a / 2;
    tab.tokens = axes ? static_cast<int64_t>(ids.size() / axes) : 0;
    tab.cos.resize(static_cast<size_t>(tab.tokens * tab.pairs));
    tab.sin.resize(tab.cos.size());
    int64_t offset = 0;
    for (size_t a = 0; a < axes; ++a) {
        const int dim = axes_dim[a];
        const int half = dim / 2;
        // Frequencies as the reference computes them: exponents linspace(0, (dim-2)/dim)
        // in float, 1 / theta^e in double.
        const float end = (static_cast<float>(dim) - 2.0f) / static_cast<float>(dim);
        const float step = half > 1 ? end / static_cast<float>(half - 1) : 0.0f;
        std::vector<float> omega(static_cast<size_t>(half));
        for (int j = 0; j < half; ++j) {
            const float e = static_cast<float>(j) * step;
            omega[static_cast<size_t>(j)] =
                static_cast<float>(1.0 / std::pow(static_cast<double>(theta), e));
        }
        for (int64_t tk = 0; tk < tab.tokens; ++tk) {
            const size_t at = static_cast<size_t>(tk) * axes + a;
            const float pos = ids[at];
            const int wrap_len = at < wrap.size() ? wrap[at] : 0;
            for (int j = 0; j < half; ++j) {
                const float angle = rope_angle(pos, omega[static_cast<size_t>(j)], wrap_len);
                const size_t i = static_cast<size_t>(tk * tab.pairs + offset + j);
                tab.cos[i] = std::cos(angle);
                tab.sin[i] = std::sin(angle);
            }
        }
        offset += half;
    }
    return tab;
}

ggml_tensor* scalar_embedder(Ctx& c, ggml_tensor* v, const std::string& p, int64_t hidden,
                             bool bias) {
    constexpr int kFeatures = 256, kMaxPeriod = 10000;
    ggml_tensor* f =
        ggml_timestep_embedding(c.ctx, ggml_scale(c.ctx, v, 1000.0f), kFeatures, kMaxPeriod);
    ggml_tensor* h = linear(c, f, p + "in_layer", kFeatures, hidden, bias);
    return linear(c, ggml_silu(c.ctx, h), p + "out_layer", hidden, hidden, bias);
}

QkvHeads norm_qk_heads(Ctx& c, ggml_tensor* q, ggml_tensor* k, ggml_tensor* v,
                       const std::string& norm, int64_t d, int64_t heads, float eps) {
    const int64_t t = q->ne[1], n = q->ne[2];
    auto per_head = [&](ggml_tensor* x) {
        // A view of x (itself possibly a view into a fused projection) as [d, heads, T, N].
        return ggml_view_4d(c.ctx, x, d, heads, t, n, d * ggml_element_size(x), x->nb[1], x->nb[2],
                            0);
    };
    QkvHeads out;
    out.q = rms_norm(c, per_head(q), norm + "query_norm.scale", d, eps);
    out.k = rms_norm(c, per_head(k), norm + "key_norm.scale", d, eps);
    out.q = ggml_reshape_3d(c.ctx, out.q, d * heads, t, n);
    out.k = ggml_reshape_3d(c.ctx, out.k, d * heads, t, n);
    out.v = ggml_is_contiguous(v) ? v : ggml_cont(c.ctx, v);
    return out;
}

QkvHeads project_qkv(Ctx& c, ggml_tensor* x, const std::string& fused, bool split,
                     const std::string& split_prefix, const std::string& norm, int64_t d,
                     int64_t heads, bool bias, float eps) {
    const int64_t hd = d * heads;
    if (split) {
        return norm_qk_heads(c, linear(c, x, split_prefix + "q", hd, hd, bias),
                             linear(c, x, split_prefix + "k", hd, hd, bias),
                             linear(c, x, split_prefix + "v", hd, hd, bias), norm, d, heads, eps);
    }
    ggml_tensor* qkv = linear(c, x, fused, hd, 3 * hd, bias);
    return norm_qk_heads(c, feature_rows(c.ctx, qkv, 0, hd), feature_rows(c.ctx, qkv, hd, hd),
                         feature_rows(c.ctx, qkv, 2 * hd, hd), norm, d, heads, eps);
}

ggml_tensor* rope_attention(ggml_context* ctx, ggml_tensor* q, ggml_tensor* k, ggml_tensor* v,
                            ggml_tensor* cos, ggml_tensor* sin, int heads, ggml_tensor* key_mask) {
    q = rope_pairs(ctx, q, cos, sin, heads);
    k = rope_pairs(ctx, k, cos, sin, heads);
    return attention(ctx, q, k, v, heads, false, key_mask);
}

}  // namespace ggdiff::nn
