#include "families/ltx/audio_vae.h"

#include <ggml.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/log.h"
#include "nn/layers.h"
#include "runtime/cpu_kernels.h"

namespace ggdiff::ltx {

namespace {

constexpr float kPixelNormEps = 1e-6f;
constexpr float kSnakeEps = 1e-9f;
constexpr int kActRatio = 2;  // anti-aliased activations: x2 up, Snake-beta, x2 down

const std::vector<int64_t>* shape_of(const TensorIndex& index, const std::string& name) {
    const TensorInfo* t = index.find(name);
    return t ? &t->shape : nullptr;
}

Status need(const TensorIndex& index, const std::string& name, size_t dims,
            const std::vector<int64_t>** shape) {
    *shape = shape_of(index, name);
    if (!*shape || (dims && (*shape)->size() != dims)) {
        return Status::Error("missing tensor " + name +
                             (dims ? " (" + std::to_string(dims) + "-D)" : std::string()));
    }
    return Status::Ok();
}

ggml_tensor* f32(ggml_context* ctx, ggml_tensor* t) {
    return t->type == GGML_TYPE_F32 ? t : ggml_cast(ctx, t, GGML_TYPE_F32);
}

// ---------------------------------------------------------------- the decoder (2-D)

ggml_tensor* pixel_norm(ggml_context* ctx, ggml_tensor* x) {
    const int64_t w = x->ne[0], h = x->ne[1];
    ggml_tensor* t = ggml_rms_norm(ctx, nn::image_to_tokens(ctx, x), kPixelNormEps);
    return nn::tokens_to_image(ctx, t, w, h);
}

// A k x k convolution over x [F, T, in, 1] causal in time: k - 1 zero rows in front, (k - 1)
// / 2 zero columns each side in frequency (k = 3 or 1).
ggml_tensor* causal_conv(nn::Ctx& c, ggml_tensor* x, const std::string& p, int64_t in, int64_t out,
                         int k) {
    ggml_tensor* w = c.W(p + "conv.weight", {k, k, in, out});
    ggml_tensor* b = c.W(p + "conv.bias", {out});
    if (k > 1) {
        const int side = (k - 1) / 2;
        x = ggml_pad_ext(c.ctx, x, side, k - 1 - side, k - 1, 0, 0, 0, 0, 0);
    }
    if (cpu::enabled(c.ctx) && cpu::can_conv2d(w, x, b)) return cpu::conv2d(c.ctx, w, x, b, 1, 0);
    ggml_tensor* y = ggml_conv_2d(c.ctx, w, x, 1, 1, 0, 0, 1, 1);
    return ggml_add(c.ctx, y, ggml_reshape_4d(c.ctx, f32(c.ctx, b), 1, 1, out, 1));
}

ggml_tensor* resnet(nn::Ctx& c, ggml_tensor* x, const std::string& p, int64_t in, int64_t out) {
    ggml_tensor* h =
        causal_conv(c, ggml_silu(c.ctx, pixel_norm(c.ctx, x)), p + "conv1.", in, out, 3);
    h = causal_conv(c, ggml_silu(c.ctx, pixel_norm(c.ctx, h)), p + "conv2.", out, out, 3);
    if (in != out) x = causal_conv(c, x, p + "nin_shortcut.", in, out, 1);
    return ggml_add(c.ctx, x, h);
}

// Rows [first, first + n) in time of x [F, T, C, N], and columns [0, f) in frequency.
ggml_tensor* crop(ggml_context* ctx, ggml_tensor* x, int64_t f, int64_t first, int64_t n) {
    return ggml_cont(ctx, ggml_view_4d(ctx, x, f, n, x->ne[2], x->ne[3], x->nb[1], x->nb[2],
                                       x->nb[3], static_cast<size_t>(first) * x->nb[1]));
}

// ---------------------------------------------------------------- the vocoder (1-D)

// x [T, in, 1] -> [T', out, 1]: a 1-D convolution, weight torch [out, in, k].
ggml_tensor* conv1d(nn::Ctx& c, ggml_tensor* x, const std::string& p, int64_t in, int64_t out,
                    int k, int pad, int dilation = 1, bool bias = true) {
    ggml_tensor* w = f32(c.ctx, c.W(p + "weight", {k, in, out}));
    ggml_tensor* y = ggml_conv_1d(c.ctx, w, x, 1, pad, dilation);
    if (bias)
        y = ggml_add(c.ctx, y, ggml_reshape_2d(c.ctx, f32(c.ctx, c.W(p + "bias", {out})), 1, out));
    return y;
}

// Samples [first, first + n) of x [T, C, N] (time along dim 0).
ggml_tensor* samples(ggml_context* ctx, ggml_tensor* x, int64_t first, int64_t n) {
    return ggml_view_3d(ctx, x, n, x->ne[1], x->ne[2], x->nb[1], x->nb[2],
                        static_cast<size_t>(first) * x->nb[0]);
}

// x [T, C, N] with `left` copies of its first sample in front and `right` of its last behind.
ggml_tensor* replicate_pad(ggml_context* ctx, ggml_tensor* x, int left, int right) {
    const int64_t t = x->ne[0];
    if (left > 0) {
        ggml_tensor* first = ggml_cont(ctx, samples(ctx, x, 0, 1));
        x = ggml_concat(ctx, ggml_repeat_4d(ctx, first, left, x->ne[1], x->ne[2], 1), x, 0);
    }
    if (right > 0) {
        ggml_tensor* last = ggml_cont(ctx, samples(ctx, x, left + t - 1, 1));
        x = ggml_concat(ctx, x, ggml_repeat_4d(ctx, last, right, x->ne[1], x->ne[2], 1), 0);
    }
    return x;
}

// x [L, 1, ch] upsampled r times by a transposed convolution with `taps` [k, 1, 1] (each sample
// followed by r - 1 zeros, correlated with the reversed taps), then samples [first, first + n)
// times r. Channels ride in the batch dimension of the filter.
ggml_tensor* transposed_upsample(ggml_context* ctx, ggml_tensor* x, ggml_tensor* taps, int r,
                                 int64_t first, int64_t n) {
    const int64_t l = x->ne[0], ch = x->ne[2], k = taps->ne[0];
    ggml_tensor* s = ggml_reshape_3d(ctx, x, 1, l, ch);
    ggml_tensor* zeros = ggml_scale(ctx, s, 0.0f);
    for (int i = 1; i < r; ++i) s = ggml_concat(ctx, s, zeros, 0);
    s = ggml_reshape_3d(ctx, ggml_cont(ctx, s), r * l, 1, ch);
    ggml_tensor* rev = nullptr;
    for (int64_t i = k - 1; i >= 0; --i) {
        ggml_tensor* tap = ggml_view_3d(ctx, taps, 1, 1, 1, taps->nb[1], taps->nb[2],
                                        static_cast<size_t>(i) * taps->nb[0]);
        rev = rev ? ggml_concat(ctx, rev, tap, 0) : ggml_cont(ctx, tap);
    }
    ggml_tensor* y = ggml_conv_1d(ctx, rev, s, 1, static_cast<int>(k - 1), 1);
    return ggml_scale(ctx, ggml_cont(ctx, samples(ctx, y, first, n)), static_cast<float>(r));
}

// Anti-aliased Snake-beta on x [T, C, 1]: x2 up (zeros between samples, the transposed
// 12-tap filter, times 2), x + sin^2(x e^alpha) / (e^beta + eps), x2 down (12-tap low-pass,
// stride 2); edges replicated. Channels ride in the batch dimension of the filters.
ggml_tensor* activation(nn::Ctx& c, ggml_tensor* x, const std::string& p, int64_t ch) {
    const int64_t t = x->ne[0];
    ggml_tensor* up = f32(c.ctx, c.W(p + "upsample.filter", {12, 1, 1}));
    ggml_tensor* down = f32(c.ctx, c.W(p + "downsample.lowpass.filter", {12, 1, 1}));
    const int k = 12, r = kActRatio;
    const int up_pad = k / r - 1;
    const int up_left = up_pad * r + (k - r) / 2;
    x = ggml_reshape_3d(c.ctx, x, t, 1, ch);
    x = replicate_pad(c.ctx, x, up_pad, up_pad);
    ggml_tensor* y = transposed_upsample(c.ctx, x, up, r, up_left, r * t);
    // Snake-beta.
    ggml_tensor* alpha =
        ggml_reshape_3d(c.ctx, ggml_exp(c.ctx, f32(c.ctx, c.W(p + "act.alpha", {ch}))), 1, 1, ch);
    ggml_tensor* beta =
        ggml_reshape_3d(c.ctx, ggml_exp(c.ctx, f32(c.ctx, c.W(p + "act.beta", {ch}))), 1, 1, ch);
    ggml_tensor* wave = ggml_sin(c.ctx, ggml_mul(c.ctx, y, alpha));
    wave = ggml_div(c.ctx, ggml_sqr(c.ctx, wave), ggml_scale_bias(c.ctx, beta, 1.0f, kSnakeEps));
    y = ggml_add(c.ctx, y, wave);
    // Down.
    y = replicate_pad(c.ctx, y, k / 2 - (k % 2 == 0 ? 1 : 0), k / 2);
    y = ggml_conv_1d(c.ctx, down, y, r, 0, 1);  // [t, 1, ch]
    return ggml_reshape_3d(c.ctx, y, t, ch, 1);
}

ggml_tensor* amp_block(nn::Ctx& c, const LtxAudioVaeConfig& cfg, ggml_tensor* x,
                       const std::string& p, int64_t ch, int k) {
    for (int i = 0; i < 3; ++i) {
        const std::string n = std::to_string(i);
        const int d = cfg.dilations[static_cast<size_t>(i)];
        ggml_tensor* h = activation(c, x, p + "acts1." + n + ".", ch);
        h = conv1d(c, h, p + "convs1." + n + ".", ch, ch, k, (k * d - d) / 2, d);
        h = activation(c, h, p + "acts2." + n + ".", ch);
        h = conv1d(c, h, p + "convs2." + n + ".", ch, ch, k, k / 2);
        x = ggml_add(c.ctx, x, h);
    }
    return x;
}

// One BigVGAN-style vocoder under `prefix`: mel [bins, T, channels, 1] -> [T * prod(rates),
// out channels, 1] (no final clamp).
struct VocoderShape {
    std::string prefix;
    int64_t channels;  // conv_pre output, halved by each upsampler
    const std::vector<int>& rates;
    const std::vector<int>& kernels;
    const std::vector<int>& resblock_kernels;
};

ggml_tensor* vocoder(nn::Ctx& c, const LtxAudioVaeConfig& cfg, const VocoderShape& v,
                     ggml_tensor* mel) {
    const int64_t frames = mel->ne[1], in = mel->ne[0] * mel->ne[2];
    // [bins, T, channels] -> [T, channels * bins] (channel-major).
    ggml_tensor* x = ggml_cont(c.ctx, ggml_permute(c.ctx, mel, 1, 0, 2, 3));
    x = ggml_reshape_3d(c.ctx, x, frames, in, 1);
    int64_t ch = v.channels;
    x = conv1d(c, x, v.prefix + "conv_pre.", in, ch, 7, 3);
    const size_t kinds = v.resblock_kernels.size();
    for (size_t i = 0; i < v.rates.size(); ++i) {
        const int rate = v.rates[i], k = v.kernels[i];
        const int64_t next = ch / 2;
        const std::string p = v.prefix + "ups." + std::to_string(i) + ".";
        ggml_tensor* w = f32(c.ctx, c.W(p + "weight", {k, next, ch}));
        ggml_tensor* y = ggml_conv_transpose_1d(c.ctx, w, x, rate, 0, 1);
        const int pad = (k - rate) / 2;
        y = ggml_cont(c.ctx, samples(c.ctx, y, pad, y->ne[0] - 2 * pad));
        x = ggml_add(c.ctx, y,
                     ggml_reshape_2d(c.ctx, f32(c.ctx, c.W(p + "bias", {next})), 1, next));
        ch = next;
        ggml_tensor* sum = nullptr;
        for (size_t j = 0; j < kinds; ++j) {
            const std::string r = v.prefix + "resblocks." + std::to_string(i * kinds + j) + ".";
            ggml_tensor* b = amp_block(c, cfg, x, r, ch, v.resblock_kernels[j]);
            sum = sum ? ggml_add(c.ctx, sum, b) : b;
        }
        x = ggml_scale(c.ctx, sum, 1.0f / static_cast<float>(kinds));
    }
    x = activation(c, x, v.prefix + "act_post.", ch);
    return conv1d(c, x, v.prefix + "conv_post.", ch, cfg.audio_channels, 7, 3, 1, false);
}

// The bandwidth extension's sinc: zeros of the sinc kept, and the rolloff (as the reference).
constexpr int kBweSincZeros = 6;
constexpr double kBweRolloff = 0.99;
int bwe_sinc_width() {
    return static_cast<int>(std::ceil(kBweSincZeros / kBweRolloff));
}

// The vocoder under `v` on `in` input channels: its width (conv_pre's output, halved once per
// rate), upsampler kernels (one per rate) and resblock kernels (3 kinds).
Status detect_vocoder(const TensorIndex& index, const std::string& v, int64_t in,
                      const std::vector<int>& rates, int64_t* channels, std::vector<int>* kernels,
                      std::vector<int>* resblock_kernels) {
    const size_t ups = rates.size();
    const std::vector<int64_t>* s = nullptr;
    GGDIFF_TRY(need(index, v + "conv_pre.weight", 3, &s));
    *channels = (*s)[0];
    if ((*s)[1] != in) {
        return Status::Error(v + "conv_pre.weight takes " + std::to_string((*s)[1]) +
                             " channels, expected " + std::to_string(in));
    }
    if ((*channels >> ups) < 1) {
        return Status::Error(v + "conv_pre.weight: " + std::to_string(*channels) +
                             " channels cannot be halved " + std::to_string(ups) + " times");
    }
    kernels->clear();
    resblock_kernels->clear();
    for (size_t i = 0;; ++i) {
        const std::vector<int64_t>* us =
            shape_of(index, v + "ups." + std::to_string(i) + ".weight");
        if (!us) break;
        kernels->push_back(static_cast<int>(us->back()));
    }
    if (kernels->size() != ups) {
        std::string list;
        for (int r : rates) list += (list.empty() ? "" : ", ") + std::to_string(r);
        return Status::Error(v + "ups.*: " + std::to_string(kernels->size()) +
                             " upsamplers, the vocoder has " + std::to_string(ups) + " (rates " +
                             list + ")");
    }
    for (int j = 0; j < 3; ++j) {
        GGDIFF_TRY(need(index, v + "resblocks." + std::to_string(j) + ".convs1.0.weight", 3, &s));
        resblock_kernels->push_back(static_cast<int>((*s)[2]));
    }
    return need(index, v + "conv_post.weight", 3, &s);
}

}  // namespace

bool find_ltx_audio_vae(const TensorIndex& index, std::string* prefix) {
    for (const char* p : {"", "audio_vae_model.", "first_stage_model."}) {
        if (index.has(std::string(p) + "audio_vae.decoder.conv_in.conv.weight")) {
            if (prefix) *prefix = p;
            return true;
        }
    }
    if (prefix) prefix->clear();
    return false;
}

Result<LtxAudioVaeConfig> detect_ltx_audio_vae(const TensorIndex& index,
                                               const std::string& prefix) {
    LtxAudioVaeConfig cfg;
    cfg.prefix = prefix;
    const std::string d = prefix + "audio_vae.decoder.";
    const std::string v = prefix + "vocoder.vocoder.";
    const std::vector<int64_t>* s = nullptr;
    GGDIFF_TRY(need(index, d + "conv_in.conv.weight", 4, &s));
    cfg.latent_channels = (*s)[1];
    GGDIFF_TRY(need(index, d + "conv_out.conv.weight", 4, &s));
    cfg.audio_channels = (*s)[0];
    GGDIFF_TRY(need(index, prefix + "audio_vae.per_channel_statistics.std-of-means", 1, &s));
    if ((*s)[0] % cfg.latent_channels != 0) {
        return Status::Error(prefix + "audio_vae.per_channel_statistics.std-of-means has " +
                             std::to_string((*s)[0]) + " values, not a multiple of " +
                             std::to_string(cfg.latent_channels) + " latent channels");
    }
    cfg.latent_bins = (*s)[0] / cfg.latent_channels;
    cfg.mel_bins = cfg.latent_bins * 4;
    for (int level = 0;; ++level) {
        const std::string p = d + "up." + std::to_string(level) + ".block.0.conv1.conv.weight";
        const std::vector<int64_t>* ls = shape_of(index, p);
        if (!ls) break;
        if (level == 0) cfg.base_channels = (*ls)[0];
        cfg.multipliers.push_back((*ls)[0] / std::max<int64_t>(1, cfg.base_channels));
    }
    if (cfg.multipliers.empty()) {
        return Status::Error("missing tensor " + d + "up.0.block.0.conv1.conv.weight");
    }
    int blocks = 0;
    while (index.has(d + "up.0.block." + std::to_string(blocks) + ".conv1.conv.weight")) ++blocks;
    cfg.res_blocks = blocks - 1;
    // The reference fixes the upsampling rates (16 kHz from 160-sample mel frames).
    cfg.upsample_rates = {5, 2, 2, 2, 2, 2};
    GGDIFF_TRY(detect_vocoder(index, v, cfg.mel_bins * cfg.audio_channels, cfg.upsample_rates,
                              &cfg.vocoder_channels, &cfg.upsample_kernels, &cfg.resblock_kernels));
    cfg.sample_rate = cfg.vocoder_rate;
    const std::string b = prefix + "vocoder.bwe_generator.";
    cfg.has_bwe = index.has_prefix(b);
    if (!cfg.has_bwe) return cfg;
    // The bandwidth extension: its STFT and mel bank from the file, its vocoder's widths and
    // kernels from the weights; rates, hop and ratio fixed as in the reference.
    const std::string m = prefix + "vocoder.mel_stft.";
    GGDIFF_TRY(need(index, m + "stft_fn.forward_basis", 3, &s));
    cfg.bwe_fft = (*s)[2];
    if ((*s)[1] != 1 || (*s)[0] != cfg.bwe_fft + 2 || cfg.bwe_fft <= cfg.bwe_hop) {
        return Status::Error(m +
                             "stft_fn.forward_basis is not [n_fft + 2, 1, n_fft] with n_fft > " +
                             std::to_string(cfg.bwe_hop));
    }
    GGDIFF_TRY(need(index, m + "mel_basis", 2, &s));
    cfg.bwe_mel_bins = (*s)[0];
    if ((*s)[1] != cfg.bwe_fft / 2 + 1) {
        return Status::Error(m + "mel_basis has " + std::to_string((*s)[1]) +
                             " frequencies, the STFT " + std::to_string(cfg.bwe_fft / 2 + 1));
    }
    GGDIFF_TRY(detect_vocoder(index, b, cfg.bwe_mel_bins * cfg.audio_channels, cfg.bwe_rates,
                              &cfg.bwe_channels, &cfg.bwe_kernels, &cfg.bwe_resblock_kernels));
    cfg.sample_rate = cfg.vocoder_rate * cfg.bwe_ratio;
    return cfg;
}

ggml_tensor* build_ltx_audio_mel(nn::Ctx& c, const LtxAudioVaeConfig& cfg, ggml_tensor* latent) {
    const std::string d = cfg.prefix + "audio_vae.decoder.";
    const std::string st = cfg.prefix + "audio_vae.per_channel_statistics.";
    const int64_t bins = cfg.latent_bins, lc = cfg.latent_channels, frames = latent->ne[1];
    const int64_t n = bins * lc;
    // Statistics per (channel, bin), bin fastest: broadcast over time.
    ggml_tensor* std_ =
        ggml_reshape_4d(c.ctx, f32(c.ctx, c.W(st + "std-of-means", {n})), bins, 1, lc, 1);
    ggml_tensor* mean =
        ggml_reshape_4d(c.ctx, f32(c.ctx, c.W(st + "mean-of-means", {n})), bins, 1, lc, 1);
    ggml_tensor* x = ggml_add(c.ctx, ggml_mul(c.ctx, latent, std_), mean);
    int64_t ch = cfg.base_channels * cfg.multipliers.back();
    x = causal_conv(c, x, d + "conv_in.", lc, ch, 3);
    x = resnet(c, x, d + "mid.block_1.", ch, ch);
    x = resnet(c, x, d + "mid.block_2.", ch, ch);
    for (int level = static_cast<int>(cfg.multipliers.size()) - 1; level >= 0; --level) {
        const std::string p = d + "up." + std::to_string(level) + ".";
        const int64_t out = cfg.base_channels * cfg.multipliers[static_cast<size_t>(level)];
        for (int b = 0; b <= cfg.res_blocks; ++b) {
            x = resnet(c, x, p + "block." + std::to_string(b) + ".", ch, out);
            ch = out;
        }
        if (level != 0) {
            x = causal_conv(c, nn::upsample_nearest2x(c.ctx, x), p + "upsample.conv.", ch, ch, 3);
            x = crop(c.ctx, x, x->ne[0], 1, x->ne[1] - 1);  // without the first time row
        }
    }
    x = ggml_silu(c.ctx, pixel_norm(c.ctx, x));
    x = causal_conv(c, x, d + "conv_out.", ch, cfg.audio_channels, 3);
    const int64_t want_t = std::min<int64_t>(x->ne[1], cfg.mel_frames(static_cast<int>(frames)));
    return crop(c.ctx, x, std::min(x->ne[0], cfg.mel_bins), 0, want_t);
}

ggml_tensor* build_ltx_vocoder(nn::Ctx& c, const LtxAudioVaeConfig& cfg, ggml_tensor* mel,
                               bool clamp) {
    const VocoderShape shape{cfg.prefix + "vocoder.vocoder.", cfg.vocoder_channels,
                             cfg.upsample_rates, cfg.upsample_kernels, cfg.resblock_kernels};
    ggml_tensor* x = vocoder(c, cfg, shape, mel);
    return clamp ? ggml_clamp(c.ctx, x, -1.0f, 1.0f) : x;
}

std::vector<float> ltx_bwe_resample_filter(int ratio) {
    constexpr double kPi = 3.14159265358979323846;
    const int width = bwe_sinc_width();
    const int taps = 2 * width * ratio + 1;
    std::vector<float> f(static_cast<size_t>(taps));
    for (int i = 0; i < taps; ++i) {
        const double t = (static_cast<double>(i) / ratio - width) * kBweRolloff;
        const double tc = std::clamp(t, -double(kBweSincZeros), double(kBweSincZeros));
        const double w = std::cos(tc * kPi / kBweSincZeros / 2.0);
        const double sinc = t == 0.0 ? 1.0 : std::sin(kPi * t) / (kPi * t);
        f[static_cast<size_t>(i)] = static_cast<float>(sinc * w * w * kBweRolloff / ratio);
    }
    return f;
}

ggml_tensor* build_ltx_bwe_mel(nn::Ctx& c, const LtxAudioVaeConfig& cfg, ggml_tensor* wave) {
    // The STFT as a strided convolution (n_fft - hop zeros in front), magnitudes of the (real,
    // imaginary) halves, the mel filter bank, log. One channel at a time: ggml_conv_1d lays a
    // batch of several inputs out wrongly when the kernel has several outputs (the reference
    // convolves both channels at once and so mixes their spectra; see docs/ltx2_vae.md).
    const std::string m = cfg.prefix + "vocoder.mel_stft.";
    const int64_t nfft = cfg.bwe_fft, freqs = nfft / 2 + 1, t = wave->ne[0], ch = wave->ne[1];
    const int hop = cfg.bwe_hop;
    ggml_tensor* basis = f32(c.ctx, c.W(m + "stft_fn.forward_basis", {nfft, 1, 2 * freqs}));
    ggml_tensor* mel_basis = f32(c.ctx, c.W(m + "mel_basis", {freqs, cfg.bwe_mel_bins}));
    ggml_tensor* out = nullptr;
    for (int64_t k = 0; k < ch; ++k) {
        ggml_tensor* x = ggml_view_3d(c.ctx, wave, t, 1, 1, wave->nb[1], wave->nb[1],
                                      static_cast<size_t>(k) * wave->nb[1]);
        x = ggml_pad_ext(c.ctx, ggml_cont(c.ctx, x), static_cast<int>(nfft - hop), 0, 0, 0, 0, 0, 0,
                         0);
        ggml_tensor* spec = ggml_conv_1d(c.ctx, basis, x, hop, 0, 1);  // [frames, 2 freqs, 1]
        const int64_t frames = spec->ne[0];
        auto half = [&](int64_t first) {
            return ggml_view_2d(c.ctx, spec, frames, freqs, spec->nb[1],
                                static_cast<size_t>(first) * spec->nb[1]);
        };
        ggml_tensor* mag = ggml_sqrt(
            c.ctx, ggml_add(c.ctx, ggml_sqr(c.ctx, half(0)), ggml_sqr(c.ctx, half(freqs))));
        mag = ggml_cont(c.ctx, ggml_transpose(c.ctx, mag));      // [freqs, frames]
        ggml_tensor* mel = ggml_mul_mat(c.ctx, mel_basis, mag);  // [mels, frames]
        mel = ggml_reshape_3d(c.ctx, mel, mel->ne[0], mel->ne[1], 1);
        out = out ? ggml_concat(c.ctx, out, mel, 2) : mel;
    }
    return ggml_log(c.ctx, ggml_clamp(c.ctx, out, 1e-5f, std::numeric_limits<float>::max()));
}

ggml_tensor* build_ltx_bwe(nn::Ctx& c, const LtxAudioVaeConfig& cfg, ggml_tensor* wave,
                           ggml_tensor* filter) {
    const int64_t t = wave->ne[0], ch = wave->ne[1];
    const int r = cfg.bwe_ratio, hop = cfg.bwe_hop;
    // Zero-padded to whole hops.
    ggml_tensor* x = ggml_reshape_3d(c.ctx, wave, t, 1, ch);
    if (t % hop != 0) x = ggml_pad(c.ctx, x, static_cast<int>(hop - t % hop), 0, 0, 0);
    const int64_t tp = x->ne[0];

    ggml_tensor* mel = build_ltx_bwe_mel(c, cfg, ggml_reshape_3d(c.ctx, x, tp, ch, 1));
    const VocoderShape shape{cfg.prefix + "vocoder.bwe_generator.", cfg.bwe_channels, cfg.bwe_rates,
                             cfg.bwe_kernels, cfg.bwe_resblock_kernels};
    ggml_tensor* residual = vocoder(c, cfg, shape, mel);  // [tp * r, ch, 1]

    // The skip path: `width` samples replicated each side, upsampled r times by the sinc taps,
    // the padding's share cut off.
    const int width = bwe_sinc_width();
    ggml_tensor* up = transposed_upsample(c.ctx, replicate_pad(c.ctx, x, width, width), filter, r,
                                          2 * width * r, r * tp);
    up = ggml_reshape_3d(c.ctx, up, r * tp, ch, 1);

    ggml_tensor* y = ggml_clamp(c.ctx, ggml_add(c.ctx, residual, up), -1.0f, 1.0f);
    return ggml_cont(c.ctx, samples(c.ctx, y, 0, r * t));
}

HostTensor ltx_bwe_filter(const LtxAudioVaeConfig& cfg) {
    if (!cfg.has_bwe) return HostTensor();
    std::vector<float> taps = ltx_bwe_resample_filter(cfg.bwe_ratio);
    HostTensor filter({static_cast<int64_t>(taps.size()), 1, 1, 1});
    filter.data = std::move(taps);
    return filter;
}

ggml_tensor* build_ltx_audio_decode(nn::Ctx& c, const LtxAudioVaeConfig& cfg, ggml_tensor* latent,
                                    ggml_tensor* bwe_filter) {
    ggml_tensor* wave = build_ltx_vocoder(c, cfg, build_ltx_audio_mel(c, cfg, latent));
    return cfg.has_bwe ? build_ltx_bwe(c, cfg, wave, bwe_filter) : wave;
}

Result<HostTensor> ltx_decode_audio(const LtxAudioVaeConfig& cfg, const HostTensor& latent,
                                    const models::WanGraphRun& run) {
    if (latent.dim(0) != cfg.latent_bins || latent.dim(2) != cfg.latent_channels ||
        latent.dim(1) < 1 || latent.dim(3) != 1) {
        return Status::Error("LTX audio VAE: a latent is [" + std::to_string(cfg.latent_bins) +
                             " bins, frames, " + std::to_string(cfg.latent_channels) +
                             " channels], got [" + std::to_string(latent.dim(0)) + ", " +
                             std::to_string(latent.dim(1)) + ", " + std::to_string(latent.dim(2)) +
                             "]");
    }
    const HostTensor filter = ltx_bwe_filter(cfg);
    auto r = run([&](nn::Ctx& c, const std::function<ggml_tensor*(const HostTensor&)>& input) {
        return std::vector<ggml_tensor*>{
            build_ltx_audio_decode(c, cfg, input(latent), cfg.has_bwe ? input(filter) : nullptr)};
    });
    if (!r.ok()) return r.status().with_context("LTX audio VAE decode");
    if (r->size() != 1) return Status::Error("LTX audio VAE: the graph returned no waveform");
    return std::move((*r)[0]);
}

}  // namespace ggdiff::ltx
