#include "models/vae/wan_vae.h"

#include <ggml.h>

#include <algorithm>

#include "core/log.h"
#include "nn/layers.h"
#include "runtime/cpu_kernels.h"
#include "runtime/kernel_choices.h"

namespace ggdiff::models {

namespace {

// Wan 2.1's latent statistics (16 channels).
const std::vector<float> kWan21Mean = {-0.7571f, -0.7089f, -0.9113f, 0.1075f,  -0.1745f, 0.9653f,
                                       -0.1517f, 1.5508f,  0.4134f,  -0.0715f, 0.5517f,  -0.3632f,
                                       -0.1922f, -0.9497f, 0.2503f,  -0.2921f};
const std::vector<float> kWan21Std = {2.8184f, 1.4541f, 2.3275f, 2.6558f, 1.2196f, 1.7708f,
                                      2.6052f, 2.0743f, 3.2687f, 2.1526f, 2.8652f, 1.5579f,
                                      1.6382f, 1.1253f, 2.8251f, 1.9160f};

// Wan 2.2's latent statistics (48 channels).
const std::vector<float> kWan22Mean = {
    -0.2289f, -0.0052f, -0.1323f, -0.2339f, -0.2799f, 0.0174f,  0.1838f,  0.1557f,
    -0.1382f, 0.0542f,  0.2813f,  0.0891f,  0.1570f,  -0.0098f, 0.0375f,  -0.1825f,
    -0.2246f, -0.1207f, -0.0698f, 0.5109f,  0.2665f,  -0.2108f, -0.2158f, 0.2502f,
    -0.2055f, -0.0322f, 0.1109f,  0.1567f,  -0.0729f, 0.0899f,  -0.2799f, -0.1230f,
    -0.0313f, -0.1649f, 0.0117f,  0.0723f,  -0.2839f, -0.2083f, -0.0520f, 0.3748f,
    0.0152f,  0.1957f,  0.1433f,  -0.2944f, 0.3573f,  -0.0548f, -0.1681f, -0.0667f};
const std::vector<float> kWan22Std = {
    0.4765f, 1.0364f, 0.4514f, 1.1677f, 0.5313f, 0.4990f, 0.4818f, 0.5013f, 0.8158f, 1.0344f,
    0.5894f, 1.0901f, 0.6885f, 0.6165f, 0.8454f, 0.4978f, 0.5759f, 0.3523f, 0.7135f, 0.6804f,
    0.5833f, 1.4146f, 0.8986f, 0.5659f, 0.7069f, 0.5338f, 0.4889f, 0.4917f, 0.4069f, 0.4999f,
    0.6866f, 0.4093f, 0.5709f, 0.6065f, 0.6415f, 0.4944f, 0.5726f, 1.2042f, 0.5458f, 1.6887f,
    0.3971f, 1.0600f, 0.3943f, 0.5537f, 0.5444f, 0.4089f, 0.7468f, 0.7744f};

// A convolution weight: [OC, IC, (KT,) K, K]. Records its temporal taps.
Status conv_shape(const TensorIndex& index, WanVaeConfig& cfg, const std::string& name, int64_t* in,
                  int64_t* out) {
    const TensorInfo* t = index.find(name);
    if (!t || (t->shape.size() != 4 && t->shape.size() != 5)) {
        return Status::Error("missing tensor " + name + " (a 2-D or 3-D convolution kernel)");
    }
    *out = t->shape[0];
    *in = t->shape[1];
    cfg.taps[name] = t->shape.size() == 5 ? t->shape[2] : 0;
    return Status::Ok();
}

Status read_blocks(const TensorIndex& index, WanVaeConfig& cfg, const std::string& list,
                   bool decoder, std::vector<WanBlock>& out) {
    for (int i = 0;; ++i) {
        const std::string p = list + std::to_string(i) + ".";
        if (!index.has_prefix(p)) break;
        const std::string nested = p + (decoder ? "upsamples." : "downsamples.");
        if (index.has_prefix(nested)) {
            // Wan 2.2: a group of blocks.
            WanGroup g;
            g.first = out.size();
            GGDIFF_TRY(read_blocks(index, cfg, nested, decoder, out));
            g.count = out.size() - g.first;
            g.in = out[g.first].in;
            const WanBlock& last = out.back();
            g.out = last.kind == WanBlock::Kind::Residual ? last.out : out[out.size() - 2].out;
            const bool resample = last.kind != WanBlock::Kind::Residual;
            g.factor_s = resample ? 2 : 1;
            g.factor_t = resample && last.temporal ? 2 : 1;
            g.shortcut = resample || !decoder;
            const int64_t f = g.factor_t * g.factor_s * g.factor_s;
            if (g.shortcut && (decoder ? g.out * f % g.in : g.in * f % g.out) != 0) {
                return Status::Error(p + ": " + std::to_string(g.in) + " -> " +
                                     std::to_string(g.out) +
                                     " channels do not fit the shortcut's resampling");
            }
            (decoder ? cfg.decoder_groups : cfg.encoder_groups).push_back(g);
            continue;
        }
        WanBlock b;
        b.prefix = p;
        if (index.has(p + "residual.2.weight")) {
            b.kind = WanBlock::Kind::Residual;
            GGDIFF_TRY(conv_shape(index, cfg, p + "residual.2.weight", &b.in, &b.out));
            int64_t in2 = 0, out2 = 0;
            GGDIFF_TRY(conv_shape(index, cfg, p + "residual.6.weight", &in2, &out2));
            b.shortcut = index.has(p + "shortcut.weight");
            if (b.shortcut) GGDIFF_TRY(conv_shape(index, cfg, p + "shortcut.weight", &in2, &out2));
            if (!b.shortcut && b.in != b.out) {
                return Status::Error("missing tensor " + p + "shortcut.weight");
            }
        } else if (index.has(p + "resample.1.weight")) {
            b.kind = decoder ? WanBlock::Kind::Upsample : WanBlock::Kind::Downsample;
            const TensorInfo* t = index.find(p + "resample.1.weight");
            if (t->shape.size() != 4) return Status::Error(p + "resample.1.weight is not 2-D conv");
            b.out = t->shape[0];
            b.in = t->shape[1];
            b.temporal = index.has(p + "time_conv.weight");
            if (b.temporal) {
                int64_t tin = 0, tout = 0;
                GGDIFF_TRY(conv_shape(index, cfg, p + "time_conv.weight", &tin, &tout));
                const int64_t want = decoder ? 2 * b.in : b.out;
                if (tin != (decoder ? b.in : b.out) || tout != want ||
                    cfg.taps[p + "time_conv.weight"] != 3) {
                    return Status::Error(p + "time_conv.weight is not a 3x1x1 kernel of " +
                                         std::to_string(decoder ? b.in : b.out) + " -> " +
                                         std::to_string(want) + " channels");
                }
            }
        } else {
            return Status::Error("missing tensor " + p + "residual.2.weight");
        }
        out.push_back(b);
    }
    if (out.empty()) return Status::Error("missing tensor " + list + "0.residual.2.weight");
    return Status::Ok();
}

// ---------------------------------------------------------------- graph pieces

// With seamless tiling (KernelChoices::circular_x/y) x is padded by wrap-around first.
ggml_tensor* conv_w(ggml_context* ctx, ggml_tensor* x, ggml_tensor* w, ggml_tensor* b, int stride,
                    int pad) {
    if (pad > 0) {
        const KernelChoices k = kernel_choices(ctx);
        if (k.circular_x || k.circular_y) {
            x = nn::pad_wrap(ctx, x, pad, pad, pad, pad, k.circular_x, k.circular_y);
            pad = 0;
        }
    }
    if (cpu::enabled(ctx) && cpu::can_conv2d(w, x, b)) {
        return cpu::conv2d(ctx, w, x, b, stride, pad);
    }
    ggml_tensor* y = ggml_conv_2d(ctx, w, x, stride, stride, pad, pad, 1, 1);
    if (b) y = ggml_add(ctx, y, ggml_reshape_4d(ctx, b, 1, 1, b->ne[0], 1));
    return y;
}

// A (causal 3-D or 2-D) convolution on one frame: the last temporal tap of a 3-D kernel (the
// causal padding before the frame is zeros). With seamless tiling on both axes
// stable-diffusion.cpp wraps that temporal padding around as well, so every tap sees the one
// frame: the kernel is then the sum of its taps (as there; with one axis it stays zeros).
ggml_tensor* conv(nn::Ctx& c, const WanVaeConfig& cfg, ggml_tensor* x, const std::string& p,
                  int64_t in, int64_t out, int k, int stride = 1, int pad = -1) {
    if (pad < 0) pad = k / 2;
    const std::string name = p + "weight";
    auto it = cfg.taps.find(name);
    const int64_t taps = it == cfg.taps.end() ? 0 : it->second;
    ggml_tensor* w = nullptr;
    if (taps == 0) {
        w = c.W(name, {k, k, in, out});
    } else {
        w = c.W(name, {k, k, taps, in * out});
        const KernelChoices kc = kernel_choices(c.ctx);
        if (taps > 1 && kc.circular_x && kc.circular_y) {
            ggml_tensor* wf = w->type == GGML_TYPE_F32 ? w : ggml_cast(c.ctx, w, GGML_TYPE_F32);
            ggml_tensor* sum = nullptr;
            for (int64_t t = 0; t < taps; ++t) {
                ggml_tensor* tap = ggml_view_4d(c.ctx, wf, k, k, 1, in * out, wf->nb[1], wf->nb[2],
                                                wf->nb[3], static_cast<size_t>(t) * wf->nb[2]);
                sum = sum ? ggml_add(c.ctx, sum, tap) : ggml_cont(c.ctx, tap);
            }
            w = sum;
        } else if (taps > 1) {
            w = ggml_view_4d(c.ctx, w, k, k, 1, in * out, w->nb[1], w->nb[2], w->nb[3],
                             static_cast<size_t>(taps - 1) * w->nb[2]);
            w = ggml_cont(c.ctx, w);
        }
        w = ggml_reshape_4d(c.ctx, w, k, k, in, out);
    }
    return conv_w(c.ctx, x, w, c.W(p + "bias", {out}), stride, pad);
}

// RMS norm over the channels of [W, H, C, 1], times gamma.
ggml_tensor* channel_rms(nn::Ctx& c, ggml_tensor* x, const std::string& name, int64_t ch) {
    const int64_t w = x->ne[0], h = x->ne[1];
    ggml_tensor* t = nn::image_to_tokens(c.ctx, x);
    t = ggml_mul(c.ctx, ggml_rms_norm(c.ctx, t, 1e-12f), c.W(name, {ch}));
    return nn::tokens_to_image(c.ctx, t, w, h);
}

int64_t taps_of(const WanVaeConfig& cfg, const std::string& weight) {
    auto it = cfg.taps.find(weight);
    return it == cfg.taps.end() ? 0 : it->second;
}

// Frames [first, first + n) of x [W, H, C, F] (a view).
ggml_tensor* frames(ggml_context* ctx, ggml_tensor* x, int64_t first, int64_t n) {
    return ggml_view_4d(ctx, x, x->ne[0], x->ne[1], x->ne[2], n, x->nb[1], x->nb[2], x->nb[3],
                        static_cast<size_t>(first) * x->nb[3]);
}

// Temporal tap t of a 3-D kernel [k, k, taps, in * out] as a 2-D kernel [k, k, in, out].
ggml_tensor* tap_weight(ggml_context* ctx, ggml_tensor* w, int64_t t, int k, int64_t in,
                        int64_t out) {
    w = ggml_view_4d(ctx, w, k, k, 1, in * out, w->nb[1], w->nb[2], w->nb[3],
                     static_cast<size_t>(t) * w->nb[2]);
    return ggml_reshape_4d(ctx, ggml_cont(ctx, w), k, k, in, out);
}

// A causal 3-D convolution over the frames of x [W, H, C, F] (dim 3), in cache slot `slot`:
// the input sequence is the cached frames then x, with zero frames in front up to taps - 1
// frames before x; stride 1 in time, `k / 2` in space. The new cache is the last taps - 1
// frames of the sequence (fewer while it is shorter; `zero_cache`: with its zeros). With
// seamless tiling on both axes the reference wraps that temporal padding around the
// sequence as well (as it does for single frames), and so does this.
ggml_tensor* causal_conv_in(nn::Ctx& c, const WanVaeConfig& cfg, ggml_tensor* x,
                            const std::string& p, int64_t in, int64_t out, int k,
                            WanCausalCache& cache, size_t slot, bool zero_cache = false) {
    const int64_t taps = taps_of(cfg, p + "weight");
    ggml_tensor* w = c.W(p + "weight", {k, k, taps, in * out});
    ggml_tensor* b = c.W(p + "bias", {out});
    const int64_t keep = taps - 1, n = x->ne[3];
    ggml_tensor* prev = cache.in[slot];
    ggml_tensor* seq = prev ? ggml_concat(c.ctx, prev, x, 3) : x;
    const int64_t missing = std::max<int64_t>(0, keep - (prev ? prev->ne[3] : 0));
    const KernelChoices kc = kernel_choices(c.ctx);
    const bool wrap = kc.circular_x && kc.circular_y;
    const int m = static_cast<int>(missing);
    ggml_tensor* zero_seq = m > 0 ? ggml_pad_ext(c.ctx, seq, 0, 0, 0, 0, 0, 0, m, 0) : seq;
    const int64_t cached = zero_cache ? keep : std::min(keep, seq->ne[3]);
    ggml_tensor* from = zero_cache ? zero_seq : seq;
    cache.out[slot] = ggml_cont(c.ctx, frames(c.ctx, from, from->ne[3] - cached, cached));
    if (m > 0 && wrap) seq = ggml_pad_ext_circular(c.ctx, seq, 0, 0, 0, 0, 0, 0, m, 0);
    if (m > 0 && !wrap) seq = zero_seq;
    // Tap t reads frames [t, t + n) of the sequence; a tap that reads only zero padding is
    // left out (a first frame needs only its last tap).
    ggml_tensor* y = nullptr;
    for (int64_t t = taps - 1; t >= 0; --t) {
        if (!wrap && t + n <= missing) break;
        ggml_tensor* yt =
            conv_w(c.ctx, frames(c.ctx, seq, t, n), tap_weight(c.ctx, w, t, k, in, out),
                   t == taps - 1 ? b : nullptr, 1, k / 2);
        y = y ? ggml_add(c.ctx, y, yt) : yt;
    }
    return y;
}

// A convolution of the network: causal over the frames with a cache (video), else on each
// frame alone (conv above). 1x1x1 kernels need no cache.
ggml_tensor* conv3(nn::Ctx& c, const WanVaeConfig& cfg, ggml_tensor* x, const std::string& p,
                   int64_t in, int64_t out, int k, WanCausalCache* cache) {
    if (!cache || taps_of(cfg, p + "weight") <= 1) return conv(c, cfg, x, p, in, out, k);
    return causal_conv_in(c, cfg, x, p, in, out, k, *cache, cache->take());
}

ggml_tensor* residual(nn::Ctx& c, const WanVaeConfig& cfg, ggml_tensor* x, const WanBlock& b,
                      WanCausalCache* cache = nullptr) {
    const std::string& p = b.prefix;
    ggml_tensor* h = b.shortcut ? conv(c, cfg, x, p + "shortcut.", b.in, b.out, 1) : x;
    ggml_tensor* y = ggml_silu(c.ctx, channel_rms(c, x, p + "residual.0.gamma", b.in));
    y = conv3(c, cfg, y, p + "residual.2.", b.in, b.out, 3, cache);
    y = ggml_silu(c.ctx, channel_rms(c, y, p + "residual.3.gamma", b.out));
    y = conv3(c, cfg, y, p + "residual.6.", b.out, b.out, 3, cache);
    return ggml_add(c.ctx, y, h);
}

ggml_tensor* attention_block(nn::Ctx& c, ggml_tensor* x, const std::string& p, int64_t ch) {
    const int64_t w = x->ne[0], h = x->ne[1];
    ggml_tensor* t = nn::image_to_tokens(c.ctx, channel_rms(c, x, p + "norm.gamma", ch));
    ggml_tensor* qkv = nn::linear(c, t, p + "to_qkv", ch, 3 * ch);  // [3C, WH, 1]
    const size_t es = ggml_element_size(qkv);
    auto part = [&](int i) {
        return ggml_cont(c.ctx, ggml_view_3d(c.ctx, qkv, ch, qkv->ne[1], qkv->ne[2], qkv->nb[1],
                                             qkv->nb[2], static_cast<size_t>(i) * ch * es));
    };
    ggml_tensor* o = nn::attention(c.ctx, part(0), part(1), part(2), 1);
    o = nn::linear(c, o, p + "proj", ch, ch);
    return ggml_add(c.ctx, x, nn::tokens_to_image(c.ctx, o, w, h));
}

ggml_tensor* middle(nn::Ctx& c, const WanVaeConfig& cfg, ggml_tensor* x, const std::string& p,
                    int64_t ch, WanCausalCache* cache = nullptr) {
    WanBlock b;
    b.in = b.out = ch;
    b.prefix = p + "middle.0.";
    x = residual(c, cfg, x, b, cache);
    x = attention_block(c, x, p + "middle.1.", ch);  // each frame alone
    b.prefix = p + "middle.2.";
    return residual(c, cfg, x, b, cache);
}

// Wan 2.2 patches: x [W*p, H*p, C, F] -> [W, H, C*p*p, F], channel (c * p + pw) * p + ph
// holding pixel (w * p + pw, h * p + ph).
ggml_tensor* patchify(ggml_context* ctx, ggml_tensor* x, int p) {
    const int64_t w = x->ne[0] / p, h = x->ne[1] / p, ch = x->ne[2], n = x->ne[3];
    x = ggml_reshape_4d(ctx, x, p, w, p, h * ch * n);      // pw, w, ph, (h c f)
    x = ggml_cont(ctx, ggml_permute(ctx, x, 2, 0, 1, 3));  // w, ph, pw, (h c f)
    x = ggml_reshape_4d(ctx, x, w, p * p, h, ch * n);      // w, (ph pw), h, (c f)
    x = ggml_cont(ctx, ggml_permute(ctx, x, 0, 2, 1, 3));  // w, h, (ph pw), (c f)
    return ggml_reshape_4d(ctx, x, w, h, ch * p * p, n);
}

// The inverse: [W, H, C*p*p, F] -> [W*p, H*p, C, F].
ggml_tensor* unpatchify(ggml_context* ctx, ggml_tensor* x, int p) {
    const int64_t w = x->ne[0], h = x->ne[1], ch = x->ne[2] / (p * p), n = x->ne[3];
    x = ggml_reshape_4d(ctx, x, w, h, p * p, ch * n);
    x = ggml_cont(ctx, ggml_permute(ctx, x, 0, 2, 1, 3));  // w, (ph pw), h, (c f)
    x = ggml_reshape_4d(ctx, x, w, p, p, h * ch * n);      // w, ph, pw, (h c f)
    x = ggml_cont(ctx, ggml_permute(ctx, x, 1, 2, 0, 3));  // pw, w, ph, (h c f)
    return ggml_reshape_4d(ctx, x, w * p, h * p, ch, n);
}

// DupUp3D: x [W, H, IN, T] -> [W*fs, H*fs, OUT, T*ft]: the IN channels, each repeated
// OUT*ft*fs*fs/IN times, fill channel oc of pixel (iw, ih) of sub-frame it in the order
// ((oc * ft + it) * fs + ih) * fs + iw. On a first chunk the first ft - 1 frames are dropped.
ggml_tensor* dup_up(ggml_context* ctx, ggml_tensor* x, int64_t out, int ft, int fs, bool first) {
    const int64_t w = x->ne[0], h = x->ne[1], in = x->ne[2], t = x->ne[3];
    const int64_t repeats = out * ft * fs * fs / in;
    x = ggml_reshape_4d(ctx, x, w * h, 1, in, t);
    x = ggml_repeat(ctx, x, ggml_new_tensor_4d(ctx, x->type, w * h, repeats, in, t));
    // w, h, iw, ih, it, oc, t
    x = ggml_reshape_4d(ctx, x, w, h, fs, fs * ft * out * t);
    x = ggml_cont(ctx, ggml_permute(ctx, x, 1, 2, 0, 3));  // iw, w, h, (ih it oc t)
    x = ggml_reshape_4d(ctx, x, fs * w, h, fs, ft * out * t);
    x = ggml_cont(ctx, ggml_permute(ctx, x, 0, 2, 1, 3));  // (iw w), ih, h, (it oc t)
    x = ggml_reshape_4d(ctx, x, fs * w * fs * h, ft, out, t);
    x = ggml_cont(ctx, ggml_permute(ctx, x, 0, 2, 1, 3));  // (..), oc, it, t
    x = ggml_reshape_4d(ctx, x, fs * w, fs * h, out, ft * t);
    if (first && ft > 1) x = ggml_cont(ctx, frames(ctx, x, ft - 1, x->ne[3] - (ft - 1)));
    return x;
}

// AvgDown3D: x [W, H, IN, T] -> [W/fs, H/fs, OUT, ceil(T/ft)] (zero frames in front to a
// multiple of ft): channel ((c * ft + it) * fs + ih) * fs + iw of the rearranged pixels,
// averaged in groups of IN*ft*fs*fs/OUT consecutive channels.
ggml_tensor* avg_down(ggml_context* ctx, ggml_tensor* x, int64_t out, int ft, int fs) {
    const int64_t in = x->ne[2];
    const int64_t group = in * ft * fs * fs / out;
    if (fs == 1 && ft == 1 && group == 1) return x;
    const int pad = static_cast<int>((ft - x->ne[3] % ft) % ft);
    if (pad > 0) x = ggml_pad_ext(ctx, x, 0, 0, 0, 0, 0, 0, pad, 0);
    const int64_t w = x->ne[0] / fs, h = x->ne[1] / fs, t = x->ne[3] / ft;
    x = ggml_reshape_4d(ctx, x, fs, w, x->ne[1], in * x->ne[3]);  // iw, w, H, (c T)
    x = ggml_cont(ctx, ggml_permute(ctx, x, 2, 0, 1, 3));         // w, H, iw, (c T)
    x = ggml_reshape_4d(ctx, x, w, fs, h, fs * in * ft * t);      // w, ih, h, (iw c it t)
    x = ggml_cont(ctx, ggml_permute(ctx, x, 0, 2, 1, 3));         // w, h, ih, (iw c it t)
    x = ggml_reshape_4d(ctx, x, w * h, fs, fs, in * ft * t);      // wh, ih, iw, (c it t)
    x = ggml_cont(ctx, ggml_permute(ctx, x, 0, 2, 1, 3));         // wh, iw, ih, (c it t)
    x = ggml_reshape_4d(ctx, x, w * h * fs * fs, in, ft, t);      // (wh iw ih), c, it, t
    x = ggml_cont(ctx, ggml_permute(ctx, x, 0, 2, 1, 3));         // (wh iw ih), it, c, t
    // channels j = iw + fs (ih + fs (it + ft c)) in groups: [wh, group, out, t]
    x = ggml_reshape_4d(ctx, x, w * h, group, out, t);
    x = ggml_cont(ctx, ggml_permute(ctx, x, 1, 0, 2, 3));  // group, wh, out, t
    x = ggml_mean(ctx, x);                                 // 1, wh, out, t
    return ggml_reshape_4d(ctx, x, w, h, out, t);
}

}  // namespace

int WanVaeConfig::downscale() const {
    int d = patch;
    for (const WanBlock& b : decoder) {
        if (b.kind == WanBlock::Kind::Upsample) d *= 2;
    }
    return d;
}

bool is_wan_vae(const TensorIndex& index, const std::string& prefix) {
    // diffusers AutoencoderKLWan names (both layouts) are renamed to these when indexed.
    return index.has(prefix + "decoder.middle.0.residual.0.gamma");
}

Result<WanVaeConfig> detect_wan_vae(const TensorIndex& index, const std::string& prefix) {
    WanVaeConfig cfg;
    cfg.prefix = prefix;
    const std::string d = prefix + "decoder.";
    int64_t in = 0, out = 0;
    GGDIFF_TRY(conv_shape(index, cfg, prefix + "conv2.weight", &in, &out));
    cfg.z_dim = out;
    GGDIFF_TRY(conv_shape(index, cfg, d + "conv1.weight", &in, &cfg.dec_width));
    cfg.flat = cfg.taps[d + "conv1.weight"] == 0;
    if (in != cfg.z_dim) {
        return Status::Error(d + "conv1.weight takes " + std::to_string(in) +
                             " channels, the latent has " + std::to_string(cfg.z_dim));
    }
    for (int i : {0, 2}) {
        GGDIFF_TRY(conv_shape(index, cfg, d + "middle." + std::to_string(i) + ".residual.2.weight",
                              &in, &out));
        GGDIFF_TRY(conv_shape(index, cfg, d + "middle." + std::to_string(i) + ".residual.6.weight",
                              &in, &out));
    }
    GGDIFF_TRY(read_blocks(index, cfg, d + "upsamples.", true, cfg.decoder));
    int64_t head_in = 0;
    GGDIFF_TRY(conv_shape(index, cfg, d + "head.2.weight", &head_in, &cfg.image_channels));
    if (!cfg.decoder_groups.empty()) {
        // Wan 2.2: 2x2 patches of RGB.
        cfg.patch = 2;
        if (cfg.image_channels != 12) {
            return Status::Error(d + "head.2.weight makes " + std::to_string(cfg.image_channels) +
                                 " channels; a Wan 2.2 VAE makes 12 (2x2 patches of RGB)");
        }
        cfg.image_channels = 3;
    }
    if (cfg.image_channels != 3 && cfg.image_channels != 4) {
        return Status::Error(d + "head.2.weight makes " + std::to_string(cfg.image_channels) +
                             " image channels; a Wan VAE makes 3 (RGB) or 4 (RGBA)");
    }
    const std::string e = prefix + "encoder.";
    cfg.has_encoder = index.has(e + "conv1.weight") && index.has(prefix + "conv1.weight");
    if (cfg.has_encoder) {
        int64_t first = 0;
        GGDIFF_TRY(conv_shape(index, cfg, e + "conv1.weight", &cfg.encoder_channels, &first));
        if (cfg.patch > 1) {
            const int64_t pp = static_cast<int64_t>(cfg.patch) * cfg.patch;
            if (cfg.encoder_channels % pp != 0) {
                return Status::Error(e + "conv1.weight takes " +
                                     std::to_string(cfg.encoder_channels) + " channels, not " +
                                     std::to_string(pp) + " per image channel");
            }
            cfg.encoder_channels /= pp;
        }
        GGDIFF_TRY(read_blocks(index, cfg, e + "downsamples.", false, cfg.encoder));
        cfg.enc_width = cfg.encoder.back().out;
        for (int i : {0, 2}) {
            GGDIFF_TRY(conv_shape(
                index, cfg, e + "middle." + std::to_string(i) + ".residual.2.weight", &in, &out));
            GGDIFF_TRY(conv_shape(
                index, cfg, e + "middle." + std::to_string(i) + ".residual.6.weight", &in, &out));
        }
        GGDIFF_TRY(conv_shape(index, cfg, e + "head.2.weight", &in, &out));
        if (out != 2 * cfg.z_dim) {
            return Status::Error(e + "head.2.weight makes " + std::to_string(out) +
                                 " channels, expected " + std::to_string(2 * cfg.z_dim));
        }
        GGDIFF_TRY(conv_shape(index, cfg, prefix + "conv1.weight", &in, &out));
    }
    if (cfg.z_dim == 16 && !cfg.wan22()) {
        cfg.mean = kWan21Mean;
        cfg.std = kWan21Std;
    } else if (cfg.z_dim == 48 && cfg.wan22()) {
        cfg.mean = kWan22Mean;
        cfg.std = kWan22Std;
    } else {
        return Status::Error(prefix + "conv2.weight: a Wan " +
                             std::string(cfg.wan22() ? "2.2" : "2.1") + " VAE with " +
                             std::to_string(cfg.z_dim) + " latent channels is not supported (" +
                             (cfg.wan22() ? "Wan 2.2 has 48" : "Wan 2.1 has 16") + ")");
    }
    return cfg;
}

ggml_tensor* build_wan_decode(nn::Ctx& c, const WanVaeConfig& cfg, ggml_tensor* z) {
    if (cfg.wan22()) {
        WanCausalCache first;
        return build_wan_decode_chunk(c, cfg, z, 0, first);
    }
    const std::string d = cfg.prefix + "decoder.";
    ggml_tensor* x = conv(c, cfg, z, cfg.prefix + "conv2.", cfg.z_dim, cfg.z_dim, 1);
    x = conv(c, cfg, x, d + "conv1.", cfg.z_dim, cfg.dec_width, 3);
    x = middle(c, cfg, x, d, cfg.dec_width);
    int64_t ch = cfg.dec_width;
    for (const WanBlock& b : cfg.decoder) {
        if (b.kind == WanBlock::Kind::Residual) {
            x = residual(c, cfg, x, b);
        } else {
            x = nn::upsample_nearest2x(c.ctx, x);
            x = conv(c, cfg, x, b.prefix + "resample.1.", b.in, b.out, 3);
        }
        ch = b.out;
    }
    x = ggml_silu(c.ctx, channel_rms(c, x, d + "head.0.gamma", ch));
    return conv(c, cfg, x, d + "head.2.", ch, cfg.image_channels, 3);
}

ggml_tensor* build_wan_encode(nn::Ctx& c, const WanVaeConfig& cfg, ggml_tensor* x) {
    if (cfg.wan22()) {
        WanCausalCache first;
        return build_wan_encode_chunk(c, cfg, x, 0, first);
    }
    const std::string e = cfg.prefix + "encoder.";
    const int64_t first = cfg.encoder.front().in;
    x = conv(c, cfg, x, e + "conv1.", cfg.encoder_channels, first, 3);
    for (const WanBlock& b : cfg.encoder) {
        if (b.kind == WanBlock::Kind::Residual) {
            x = residual(c, cfg, x, b);
        } else {
            x = nn::pad_conv_input(c.ctx, x, 0, 1, 0, 1);  // right and bottom
            x = conv(c, cfg, x, b.prefix + "resample.1.", b.in, b.out, 3, 2, 0);
        }
    }
    x = middle(c, cfg, x, e, cfg.enc_width);
    x = ggml_silu(c.ctx, channel_rms(c, x, e + "head.0.gamma", cfg.enc_width));
    x = conv(c, cfg, x, e + "head.2.", cfg.enc_width, 2 * cfg.z_dim, 3);
    x = conv(c, cfg, x, cfg.prefix + "conv1.", 2 * cfg.z_dim, 2 * cfg.z_dim, 1);
    // The posterior mean: the first z_dim channels.
    return ggml_cont(c.ctx, ggml_view_4d(c.ctx, x, x->ne[0], x->ne[1], cfg.z_dim, 1, x->nb[1],
                                         x->nb[2], x->nb[3], 0));
}

// ---------------------------------------------------------------- video

size_t WanCausalCache::take() {
    const size_t slot = next++;
    if (in.size() <= slot) in.resize(slot + 1, nullptr);
    if (out.size() <= slot) out.resize(slot + 1, nullptr);
    return slot;
}

int wan_video_frames(int latent_frames) {
    return latent_frames <= 0 ? 0 : 1 + 4 * (latent_frames - 1);
}

int wan_latent_frames(int video_frames) {
    return video_frames <= 0 || (video_frames - 1) % 4 != 0 ? 0 : 1 + (video_frames - 1) / 4;
}

namespace {

// The group (Wan 2.2) whose first / last block is `i`, else nullptr.
const WanGroup* group_starting(const std::vector<WanGroup>& groups, size_t i) {
    for (const WanGroup& g : groups) {
        if (g.first == i) return &g;
    }
    return nullptr;
}
const WanGroup* group_ending(const std::vector<WanGroup>& groups, size_t i) {
    for (const WanGroup& g : groups) {
        if (g.first + g.count == i + 1) return &g;
    }
    return nullptr;
}

}  // namespace

ggml_tensor* build_wan_decode_chunk(nn::Ctx& c, const WanVaeConfig& cfg, ggml_tensor* z, int chunk,
                                    WanCausalCache& cache) {
    cache.next = 0;
    const std::string d = cfg.prefix + "decoder.";
    ggml_tensor* x = conv(c, cfg, z, cfg.prefix + "conv2.", cfg.z_dim, cfg.z_dim, 1);
    x = conv3(c, cfg, x, d + "conv1.", cfg.z_dim, cfg.dec_width, 3, &cache);
    x = middle(c, cfg, x, d, cfg.dec_width, &cache);
    int64_t ch = cfg.dec_width;
    ggml_tensor* group_in = nullptr;
    for (size_t i = 0; i < cfg.decoder.size(); ++i) {
        const WanBlock& b = cfg.decoder[i];
        if (group_starting(cfg.decoder_groups, i)) group_in = x;
        if (b.kind == WanBlock::Kind::Residual) {
            x = residual(c, cfg, x, b, &cache);
        } else {
            if (b.temporal) {
                // x2 frames: the time_conv makes two channel blocks per frame; block k of frame
                // f becomes frame 2 f + k. Chunk 0 keeps its one frame; the convolution's
                // sequence starts (with zeros) at chunk 1.
                const size_t slot = cache.take();
                if (chunk > 0) {
                    const int64_t w = x->ne[0], h = x->ne[1], n = x->ne[3];
                    x = causal_conv_in(c, cfg, x, b.prefix + "time_conv.", b.in, 2 * b.in, 1, cache,
                                       slot, true);
                    x = ggml_reshape_4d(c.ctx, x, w, h, b.in, 2 * n);
                }
            }
            x = nn::upsample_nearest2x(c.ctx, x);
            x = conv(c, cfg, x, b.prefix + "resample.1.", b.in, b.out, 3);
        }
        ch = b.out;
        const WanGroup* g = group_ending(cfg.decoder_groups, i);
        if (g && g->shortcut) {
            x = ggml_add(c.ctx, x,
                         dup_up(c.ctx, group_in, g->out, g->factor_t, g->factor_s, chunk == 0));
        }
    }
    x = ggml_silu(c.ctx, channel_rms(c, x, d + "head.0.gamma", ch));
    const int64_t pp = static_cast<int64_t>(cfg.patch) * cfg.patch;
    x = conv3(c, cfg, x, d + "head.2.", ch, cfg.image_channels * pp, 3, &cache);
    return cfg.patch > 1 ? unpatchify(c.ctx, x, cfg.patch) : x;
}

ggml_tensor* build_wan_encode_chunk(nn::Ctx& c, const WanVaeConfig& cfg, ggml_tensor* x, int chunk,
                                    WanCausalCache& cache) {
    cache.next = 0;
    const std::string e = cfg.prefix + "encoder.";
    const int64_t first = cfg.encoder.front().in;
    const int64_t pp = static_cast<int64_t>(cfg.patch) * cfg.patch;
    if (cfg.patch > 1) x = patchify(c.ctx, x, cfg.patch);
    x = conv3(c, cfg, x, e + "conv1.", cfg.encoder_channels * pp, first, 3, &cache);
    ggml_tensor* group_in = nullptr;
    for (size_t i = 0; i < cfg.encoder.size(); ++i) {
        const WanBlock& b = cfg.encoder[i];
        if (group_starting(cfg.encoder_groups, i)) group_in = x;
        if (b.kind == WanBlock::Kind::Residual) {
            x = residual(c, cfg, x, b, &cache);
        } else {
            x = nn::pad_conv_input(c.ctx, x, 0, 1, 0, 1);  // right and bottom
            x = conv(c, cfg, x, b.prefix + "resample.1.", b.in, b.out, 3, 2, 0);
        }
        if (b.kind != WanBlock::Kind::Residual && b.temporal) {
            // /2 frames: chunk 0 passes through; later chunks convolve (3 taps, stride 2, no
            // padding) over the previous chunk's last frame followed by their own frames.
            const size_t slot = cache.take();
            const int64_t n = x->ne[3];
            cache.out[slot] = ggml_cont(c.ctx, frames(c.ctx, x, n - 1, 1));
            if (chunk > 0) {
                const std::string p = b.prefix + "time_conv.";
                ggml_tensor* w = c.W(p + "weight", {1, 1, 3, b.out * b.out});
                ggml_tensor* prev = cache.in[slot];
                // (Without a previous frame, as when only declaring the weights: a zero frame.)
                ggml_tensor* seq = prev ? ggml_concat(c.ctx, prev, x, 3)
                                        : ggml_pad_ext(c.ctx, x, 0, 0, 0, 0, 0, 0, 1, 0);
                const int64_t outs = (seq->ne[3] - 3) / 2 + 1;
                ggml_tensor* y = nullptr;
                for (int64_t t = 0; t < 3; ++t) {
                    ggml_tensor* in = ggml_view_4d(c.ctx, seq, seq->ne[0], seq->ne[1], seq->ne[2],
                                                   outs, seq->nb[1], seq->nb[2], 2 * seq->nb[3],
                                                   static_cast<size_t>(t) * seq->nb[3]);
                    ggml_tensor* yt = conv_w(c.ctx, ggml_cont(c.ctx, in),
                                             tap_weight(c.ctx, w, t, 1, b.out, b.out),
                                             t == 0 ? c.W(p + "bias", {b.out}) : nullptr, 1, 0);
                    y = y ? ggml_add(c.ctx, y, yt) : yt;
                }
                x = y;
            }
        }
        const WanGroup* g = group_ending(cfg.encoder_groups, i);
        if (g && g->shortcut) {
            x = ggml_add(c.ctx, x, avg_down(c.ctx, group_in, g->out, g->factor_t, g->factor_s));
        }
    }
    x = middle(c, cfg, x, e, cfg.enc_width, &cache);
    x = ggml_silu(c.ctx, channel_rms(c, x, e + "head.0.gamma", cfg.enc_width));
    x = conv3(c, cfg, x, e + "head.2.", cfg.enc_width, 2 * cfg.z_dim, 3, &cache);
    x = conv(c, cfg, x, cfg.prefix + "conv1.", 2 * cfg.z_dim, 2 * cfg.z_dim, 1);
    return ggml_cont(c.ctx, ggml_view_4d(c.ctx, x, x->ne[0], x->ne[1], cfg.z_dim, x->ne[3],
                                         x->nb[1], x->nb[2], x->nb[3], 0));
}

namespace {

// Frames [first, first + n) of a host tensor [W, H, C, F].
HostTensor host_frames(const HostTensor& t, int64_t first, int64_t n) {
    HostTensor r({t.dim(0), t.dim(1), t.dim(2), n});
    const int64_t per = t.dim(0) * t.dim(1) * t.dim(2);
    std::copy(t.data.begin() + first * per, t.data.begin() + (first + n) * per, r.data.begin());
    return r;
}

// Runs the chunks in order: `build_chunk(c, x, chunk, cache)` on input frames `inputs[chunk]`,
// carrying the caches on the host; returns the outputs along dim 3.
// (`repeat`: the output of every chunk after the first is repeated that many times.)
Result<HostTensor> run_chunks(
    const std::vector<HostTensor>& inputs, const WanGraphRun& run,
    const std::function<ggml_tensor*(nn::Ctx&, ggml_tensor*, int, WanCausalCache&)>& build_chunk,
    int repeat = 1) {
    std::vector<HostTensor> caches;
    std::vector<HostTensor> outs;
    int64_t total = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
        std::vector<size_t> produced;
        auto r = run([&](nn::Ctx& c, const std::function<ggml_tensor*(const HostTensor&)>& input) {
            WanCausalCache cache;
            for (const HostTensor& h : caches) {
                cache.in.push_back(h.numel() ? input(h) : nullptr);
            }
            cache.out.assign(cache.in.size(), nullptr);
            std::vector<ggml_tensor*> list{
                build_chunk(c, input(inputs[i]), static_cast<int>(i), cache)};
            produced.clear();
            for (size_t s = 0; s < cache.out.size(); ++s) {
                if (!cache.out[s]) continue;
                list.push_back(cache.out[s]);
                produced.push_back(s);
            }
            return list;
        });
        if (!r.ok()) return r.status();
        std::vector<HostTensor>& got = *r;
        if (got.size() != produced.size() + 1) {
            return Status::Error("Wan VAE: a chunk graph returned " + std::to_string(got.size()) +
                                 " outputs, expected " + std::to_string(produced.size() + 1));
        }
        for (size_t k = 0; k < produced.size(); ++k) {
            if (caches.size() <= produced[k]) caches.resize(produced[k] + 1);
            caches[produced[k]] = std::move(got[k + 1]);
        }
        for (int k = 1; k < (i > 0 ? repeat : 1); ++k) {
            total += got[0].dim(3);
            outs.push_back(got[0]);
        }
        total += got[0].dim(3);
        outs.push_back(std::move(got[0]));
    }
    const HostTensor& f = outs.front();
    HostTensor all({f.dim(0), f.dim(1), f.dim(2), total});
    size_t at = 0;
    for (const HostTensor& o : outs) {
        std::copy(o.data.begin(), o.data.end(), all.data.begin() + static_cast<ptrdiff_t>(at));
        at += o.data.size();
    }
    return all;
}

}  // namespace

Result<HostTensor> wan_decode_video(const WanVaeConfig& cfg, const HostTensor& z,
                                    const WanGraphRun& run) {
    if (z.dim(2) != cfg.z_dim || z.dim(3) < 1) {
        return Status::Error("Wan VAE: a video latent needs " + std::to_string(cfg.z_dim) +
                             " channels per frame, got " + std::to_string(z.dim(2)));
    }
    std::vector<HostTensor> chunks;
    for (int64_t t = 0; t < z.dim(3); ++t) chunks.push_back(host_frames(z, t, 1));
    if (cfg.flat && z.dim(3) > 1) {
        GGDIFF_LOG_WARN(
            "a Wan VAE with 2-D convolutions decodes each frame alone (repeated 4 "
            "times): expect a jerky video");
    }
    return run_chunks(
        chunks, run,
        [&cfg](nn::Ctx& c, ggml_tensor* x, int chunk, WanCausalCache& cache) {
            return build_wan_decode_chunk(c, cfg, x, chunk, cache);
        },
        cfg.flat ? 4 : 1);
}

Result<HostTensor> wan_encode_video(const WanVaeConfig& cfg, const HostTensor& video,
                                    const WanGraphRun& run) {
    if (!cfg.has_encoder) {
        return Status::Error("this VAE has no encoder weights: encoding needs a full VAE");
    }
    if (video.dim(2) != cfg.encoder_channels) {
        return Status::Error("Wan VAE: the encoder takes " + std::to_string(cfg.encoder_channels) +
                             " image channels, got " + std::to_string(video.dim(2)));
    }
    if (video.dim(0) % cfg.patch != 0 || video.dim(1) % cfg.patch != 0) {
        return Status::Error("Wan VAE: the encoder takes whole " + std::to_string(cfg.patch) + "x" +
                             std::to_string(cfg.patch) + " patches, got " +
                             std::to_string(video.dim(0)) + "x" + std::to_string(video.dim(1)));
    }
    const int64_t n = video.dim(3);
    if (wan_latent_frames(static_cast<int>(n)) == 0) {
        return Status::Error("Wan VAE: a video to encode has 1 + 4 n frames (1, 5, 9, ...), got " +
                             std::to_string(n));
    }
    std::vector<HostTensor> chunks{host_frames(video, 0, 1)};
    for (int64_t f = 1; f < n; f += 4) chunks.push_back(host_frames(video, f, cfg.flat ? 1 : 4));
    if (cfg.flat && n > 1) {
        GGDIFF_LOG_WARN(
            "a Wan VAE with 2-D convolutions encodes the first frame of every 4 "
            "alone");
    }
    return run_chunks(chunks, run,
                      [&cfg](nn::Ctx& c, ggml_tensor* x, int chunk, WanCausalCache& cache) {
                          return build_wan_encode_chunk(c, cfg, x, chunk, cache);
                      });
}

}  // namespace ggdiff::models
