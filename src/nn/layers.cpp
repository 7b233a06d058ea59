#include "nn/layers.h"

#include <cmath>

#include "runtime/cpu_kernels.h"
#include "runtime/kernel_choices.h"

namespace ggdiff::nn {

namespace {

// w [kw, kh, in, out] applied to x [W, H, in, N], plus b [out] if given. Seamless tiling
// (KernelChoices::circular_x/y) pads x first, by wrap-around on those axes and with zeros on
// the others, and convolves without padding.
ggml_tensor* conv(ggml_context* ctx, ggml_tensor* w, ggml_tensor* x, ggml_tensor* b, int stride,
                  int pad) {
    if (pad > 0) {
        const KernelChoices k = kernel_choices(ctx);
        if (k.circular_x || k.circular_y) {
            x = pad_wrap(ctx, x, pad, pad, pad, pad, k.circular_x, k.circular_y);
            pad = 0;
        }
    }
    if (cpu::enabled(ctx) && cpu::can_conv2d(w, x, b)) {
        return cpu::conv2d(ctx, w, x, b, stride, pad);
    }
    ggml_tensor* y = kernel_choices(ctx).conv_direct
                         ? ggml_conv_2d_direct(ctx, w, x, stride, stride, pad, pad, 1, 1)
                         : ggml_conv_2d(ctx, w, x, stride, stride, pad, pad, 1, 1);
    if (b) y = ggml_add(ctx, y, ggml_reshape_4d(ctx, b, 1, 1, w->ne[3], 1));
    return y;
}

ggml_tensor* as_matrix(ggml_context* ctx, ggml_tensor* t) {
    return ggml_reshape_2d(ctx, t, t->ne[0] * t->ne[1] * t->ne[2], t->ne[3]);
}

ggml_tensor* add_scaled(ggml_context* ctx, ggml_tensor* sum, ggml_tensor* d, float scale) {
    if (scale != 1.0f) d = ggml_scale(ctx, d, scale);
    return sum ? ggml_add(ctx, sum, d) : d;
}

// The adapters of a convolution weight: x [W, H, in, N] -> [OW, OH, out, N] or nullptr.
ggml_tensor* conv_adapters(Ctx& c, ggml_tensor* x, const std::string& weight, int stride, int pad) {
    const std::vector<WeightAdapter>* list = c.w->adapters(weight);
    if (!list) return nullptr;
    ggml_tensor* sum = nullptr;
    for (const WeightAdapter& a : *list) {
        if (a.dense) {
            sum = add_scaled(c.ctx, sum, conv(c.ctx, a.dense, x, nullptr, stride, pad), a.scale);
        } else {
            ggml_tensor* h = conv(c.ctx, a.down, x, nullptr, stride, pad);
            sum = add_scaled(c.ctx, sum, conv(c.ctx, a.up, h, nullptr, 1, 0), a.scale);
        }
    }
    return sum;
}

}  // namespace

ggml_tensor* pad_wrap(ggml_context* ctx, ggml_tensor* x, int left, int right, int top, int bottom,
                      bool wrap_x, bool wrap_y) {
    if (wrap_x && wrap_y)
        return ggml_pad_ext_circular(ctx, x, left, right, top, bottom, 0, 0, 0, 0);
    if (wrap_x && (left || right)) {
        x = ggml_pad_ext_circular(ctx, x, left, right, 0, 0, 0, 0, 0, 0);
        left = right = 0;
    }
    if (wrap_y && (top || bottom)) {
        x = ggml_pad_ext_circular(ctx, x, 0, 0, top, bottom, 0, 0, 0, 0);
        top = bottom = 0;
    }
    if (left || right || top || bottom)
        x = ggml_pad_ext(ctx, x, left, right, top, bottom, 0, 0, 0, 0);
    return x;
}

ggml_tensor* pad_conv_input(ggml_context* ctx, ggml_tensor* x, int left, int right, int top,
                            int bottom) {
    const KernelChoices k = kernel_choices(ctx);
    return pad_wrap(ctx, x, left, right, top, bottom, k.circular_x, k.circular_y);
}

ggml_tensor* linear_adapters(Ctx& c, ggml_tensor* x, const std::string& weight) {
    const std::vector<WeightAdapter>* list = c.w->adapters(weight);
    if (!list) return nullptr;
    ggml_tensor* sum = nullptr;
    for (const WeightAdapter& a : *list) {
        if (a.dense) {
            sum =
                add_scaled(c.ctx, sum, ggml_mul_mat(c.ctx, as_matrix(c.ctx, a.dense), x), a.scale);
        } else {
            ggml_tensor* h = ggml_mul_mat(c.ctx, as_matrix(c.ctx, a.down), x);
            sum = add_scaled(c.ctx, sum, ggml_mul_mat(c.ctx, as_matrix(c.ctx, a.up), h), a.scale);
        }
    }
    return sum;
}

ggml_tensor* linear(Ctx& c, ggml_tensor* x, const std::string& prefix, int64_t in, int64_t out,
                    bool bias) {
    ggml_tensor* y = ggml_mul_mat(c.ctx, c.W(prefix + ".weight", {in, out}), x);
    if (ggml_tensor* d = linear_adapters(c, x, prefix + ".weight")) y = ggml_add(c.ctx, y, d);
    if (bias) y = ggml_add(c.ctx, y, c.W(prefix + ".bias", {out}));
    return y;
}

ggml_tensor* conv2d(Ctx& c, ggml_tensor* x, const std::string& prefix, int64_t in, int64_t out,
                    int k, int stride, int pad, bool bias) {
    ggml_tensor* w = c.W(prefix + ".weight", {k, k, in, out});
    ggml_tensor* b = bias ? c.W(prefix + ".bias", {out}) : nullptr;
    ggml_tensor* y = conv(c.ctx, w, x, b, stride, pad);
    if (ggml_tensor* d = conv_adapters(c, x, prefix + ".weight", stride, pad)) {
        y = ggml_add(c.ctx, y, d);
    }
    return y;
}

ggml_tensor* group_norm(Ctx& c, ggml_tensor* x, const std::string& prefix, int64_t channels,
                        int groups, float eps) {
    ggml_tensor* y = ggml_group_norm(c.ctx, x, groups, eps);
    ggml_tensor* w = ggml_reshape_4d(c.ctx, c.W(prefix + ".weight", {channels}), 1, 1, channels, 1);
    ggml_tensor* b = ggml_reshape_4d(c.ctx, c.W(prefix + ".bias", {channels}), 1, 1, channels, 1);
    return ggml_add(c.ctx, ggml_mul(c.ctx, y, w), b);
}

ggml_tensor* layer_norm(Ctx& c, ggml_tensor* x, const std::string& prefix, int64_t dim, float eps) {
    ggml_tensor* y = ggml_norm(c.ctx, x, eps);
    y = ggml_mul(c.ctx, y, c.W(prefix + ".weight", {dim}));
    return ggml_add(c.ctx, y, c.W(prefix + ".bias", {dim}));
}

ggml_tensor* expand_kv_heads(ggml_context* ctx, ggml_tensor* x, int64_t d, int64_t kv,
                             int64_t heads) {
    if (kv == heads) return x;
    const int64_t t = x->ne[1], n = x->ne[2];
    ggml_tensor* x4 = ggml_reshape_4d(ctx, x, d, 1, kv, t * n);
    ggml_tensor* shape = ggml_new_tensor_4d(ctx, x->type, d, heads / kv, kv, t * n);
    return ggml_reshape_3d(ctx, ggml_repeat(ctx, x4, shape), d * heads, t, n);
}

ggml_tensor* attention(ggml_context* ctx, ggml_tensor* q, ggml_tensor* k, ggml_tensor* v, int heads,
                       bool causal, ggml_tensor* key_mask, bool ggml_only) {
    const int64_t dim = q->ne[0];
    const int64_t d = dim / heads;
    const int64_t tq = q->ne[1], tk = k->ne[1];
    const int64_t n = q->ne[2];
    if (!ggml_only && cpu::enabled(ctx) && q->type == GGML_TYPE_F32 && k->type == GGML_TYPE_F32 &&
        v->type == GGML_TYPE_F32) {
        return cpu::attention(ctx, q, k, v, heads, causal, key_mask);
    }
    // The mask as [Tk, 1, 1, N]: one row per batch item, broadcast over queries and heads.
    ggml_tensor* mask4 = key_mask ? ggml_reshape_4d(ctx, key_mask, tk, 1, 1, n) : nullptr;
    // [d, H, T, N] -> [d, T, H, N]
    q = ggml_permute(ctx, ggml_reshape_4d(ctx, q, d, heads, tq, n), 0, 2, 1, 3);
    k = ggml_permute(ctx, ggml_reshape_4d(ctx, k, d, heads, tk, n), 0, 2, 1, 3);
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    if (!causal && !ggml_only && kernel_choices(ctx).flash_attention) {
        // Flash attention (--fa): K and V in f16 as the GPU kernels expect, f32 accumulation;
        // the result comes back as [d, H, Tq, N].
        ggml_tensor* v16 = ggml_permute(ctx, ggml_reshape_4d(ctx, v, d, heads, tk, n), 0, 2, 1, 3);
        // The kernel takes an f16 mask with a row per query.
        ggml_tensor* m16 = nullptr;
        if (mask4) {
            m16 = ggml_cast(
                ctx, ggml_repeat(ctx, mask4, ggml_new_tensor_4d(ctx, GGML_TYPE_F32, tk, tq, 1, n)),
                GGML_TYPE_F16);
        }
        ggml_tensor* out =
            ggml_flash_attn_ext(ctx, q, ggml_cast(ctx, k, GGML_TYPE_F16),
                                ggml_cast(ctx, v16, GGML_TYPE_F16), m16, scale, 0.0f, 0.0f);
        // Newer ggml spells this ggml_prec_set_acc; the pinned source release has only this.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
        ggml_flash_attn_ext_set_prec(out, GGML_PREC_F32);
#pragma GCC diagnostic pop
        return ggml_reshape_3d(ctx, out, dim, tq, n);
    }
    // v^T: [Tk, d, H, N]
    v = ggml_cont(ctx, ggml_permute(ctx, ggml_reshape_4d(ctx, v, d, heads, tk, n), 1, 2, 0, 3));
    ggml_tensor* kq = ggml_mul_mat(ctx, k, q);  // [Tk, Tq, H, N]
    if (ggml_only) ggml_set_name(kq, cpu::kGgmlOnlyProduct);
    if (causal) {
        kq = ggml_scale(ctx, kq, scale);
        kq = ggml_diag_mask_inf(ctx, kq, 0);
        if (mask4) kq = ggml_add(ctx, kq, mask4);
        kq = ggml_soft_max(ctx, kq);
    } else if (mask4) {
        kq = ggml_soft_max(ctx, ggml_add(ctx, ggml_scale(ctx, kq, scale), mask4));
    } else {
        kq = ggml_soft_max_ext(ctx, kq, nullptr, scale, 0.0f);
    }
    ggml_tensor* out = ggml_mul_mat(ctx, v, kq);  // [d, Tq, H, N]
    if (ggml_only) ggml_set_name(out, cpu::kGgmlOnlyProduct);
    out = ggml_cont(ctx, ggml_permute(ctx, out, 0, 2, 1, 3));  // [d, H, Tq, N]
    return ggml_reshape_3d(ctx, out, dim, tq, n);
}

ggml_tensor* attention_biased(ggml_context* ctx, ggml_tensor* q, ggml_tensor* k, ggml_tensor* v,
                              int heads, ggml_tensor* bias, float scale, ggml_tensor* key_mask) {
    const int64_t dim = q->ne[0];
    const int64_t d = dim / heads;
    const int64_t tq = q->ne[1], tk = k->ne[1];
    const int64_t n = q->ne[2];
    q = ggml_permute(ctx, ggml_reshape_4d(ctx, q, d, heads, tq, n), 0, 2, 1, 3);
    k = ggml_permute(ctx, ggml_reshape_4d(ctx, k, d, heads, tk, n), 0, 2, 1, 3);
    v = ggml_cont(ctx, ggml_permute(ctx, ggml_reshape_4d(ctx, v, d, heads, tk, n), 1, 2, 0, 3));
    ggml_tensor* kq = ggml_mul_mat(ctx, k, q);  // [Tk, Tq, H, N]
    if (scale != 1.0f) kq = ggml_scale(ctx, kq, scale);
    kq = ggml_add(ctx, kq, bias);
    if (key_mask) kq = ggml_add(ctx, kq, ggml_reshape_4d(ctx, key_mask, tk, 1, 1, n));
    kq = ggml_soft_max(ctx, kq);
    ggml_tensor* out = ggml_mul_mat(ctx, v, kq);               // [d, Tq, H, N]
    out = ggml_cont(ctx, ggml_permute(ctx, out, 0, 2, 1, 3));  // [d, H, Tq, N]
    return ggml_reshape_3d(ctx, out, dim, tq, n);
}

ggml_tensor* image_to_tokens(ggml_context* ctx, ggml_tensor* x) {
    const int64_t w = x->ne[0], h = x->ne[1], ch = x->ne[2], n = x->ne[3];
    x = ggml_cont(ctx, ggml_permute(ctx, x, 1, 2, 0, 3));  // [C, W, H, N]
    return ggml_reshape_3d(ctx, x, ch, w * h, n);
}

ggml_tensor* tokens_to_image(ggml_context* ctx, ggml_tensor* x, int64_t w, int64_t h) {
    const int64_t ch = x->ne[0], n = x->ne[2];
    x = ggml_reshape_4d(ctx, x, ch, w, h, n);
    return ggml_cont(ctx, ggml_permute(ctx, x, 2, 0, 1, 3));  // [W, H, C, N]
}

ggml_tensor* upsample_nearest2x(ggml_context* ctx, ggml_tensor* x) {
    return ggml_upscale(ctx, x, 2, GGML_SCALE_MODE_NEAREST);
}

ggml_tensor* upsample_nearest(ggml_context* ctx, ggml_tensor* x, int64_t w, int64_t h) {
    if (w == 2 * x->ne[0] && h == 2 * x->ne[1]) return upsample_nearest2x(ctx, x);
    return ggml_interpolate(ctx, x, w, h, x->ne[2], x->ne[3], GGML_SCALE_MODE_NEAREST);
}

}  // namespace ggdiff::nn
