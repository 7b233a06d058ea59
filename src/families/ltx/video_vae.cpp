#include "families/ltx/video_vae.h"

#include <ggml.h>

#include <algorithm>
#include <cmath>

#include "core/log.h"
#include "nn/layers.h"
#include "runtime/cpu_kernels.h"

namespace ggdiff::ltx {

namespace {

constexpr int kTimestepFeatures = 256;  // sinusoidal features of the timestep embedders
constexpr float kPixelNormEps = 1e-8f;

// ---------------------------------------------------------------- detection

const TensorInfo* conv3d_info(const TensorIndex& index, const std::string& conv) {
    const TensorInfo* t = index.find(conv + "conv.weight");
    if (!t || t->shape.size() != 5 || t->shape[2] != 3 || t->shape[3] != 3 || t->shape[4] != 3) {
        return nullptr;
    }
    return index.has(conv + "conv.bias") ? t : nullptr;
}

Status need_conv(const TensorIndex& index, const std::string& conv, int64_t in, int64_t* out) {
    const TensorInfo* t = conv3d_info(index, conv);
    if (!t) {
        return Status::Error("missing tensor " + conv +
                             "conv.weight (a 3x3x3 convolution kernel with its bias)");
    }
    if (in > 0 && t->shape[1] != in) {
        return Status::Error(conv + "conv.weight takes " + std::to_string(t->shape[1]) +
                             " channels, expected " + std::to_string(in));
    }
    *out = t->shape[0];
    return Status::Ok();
}

Status need_shape(const TensorIndex& index, const std::string& name,
                  const std::vector<int64_t>& shape) {
    const TensorInfo* t = index.find(name);
    if (!t) return Status::Error("missing tensor " + name);
    int64_t n = 1, want = 1;
    for (int64_t d : t->shape) n *= d;
    for (int64_t d : shape) want *= d;
    if (n != want) {
        return Status::Error(name + " has " + std::to_string(n) + " values, expected " +
                             std::to_string(want));
    }
    return Status::Ok();
}

Status need_embedder(const TensorIndex& index, const std::string& p, int64_t dim) {
    GGDIFF_TRY(need_shape(index, p + "linear_1.weight", {dim, kTimestepFeatures}));
    GGDIFF_TRY(need_shape(index, p + "linear_1.bias", {dim}));
    GGDIFF_TRY(need_shape(index, p + "linear_2.weight", {dim, dim}));
    return need_shape(index, p + "linear_2.bias", {dim});
}

// ---------------------------------------------------------------- graph pieces

// F32 copies of small tables (F16/BF16 in most files) so element-wise ops accept them.
ggml_tensor* f32(ggml_context* ctx, ggml_tensor* t) {
    return t->type == GGML_TYPE_F32 ? t : ggml_cast(ctx, t, GGML_TYPE_F32);
}

// Frames [first, first + n) of x [W, H, C, F] (a view).
ggml_tensor* frame_range(ggml_context* ctx, ggml_tensor* x, int64_t first, int64_t n) {
    return ggml_view_4d(ctx, x, x->ne[0], x->ne[1], x->ne[2], n, x->nb[1], x->nb[2], x->nb[3],
                        static_cast<size_t>(first) * x->nb[3]);
}

// One value per channel, shaped to broadcast over [W, H, C, F].
ggml_tensor* per_channel(ggml_context* ctx, ggml_tensor* v) {
    return ggml_reshape_4d(ctx, v, 1, 1, ggml_nelements(v), 1);
}

// Row r of a [C, rows] table, per channel.
ggml_tensor* table_row(ggml_context* ctx, ggml_tensor* t, int64_t r) {
    ggml_tensor* row = ggml_view_1d(ctx, t, t->ne[0], static_cast<size_t>(r) * t->nb[1]);
    return per_channel(ctx, ggml_cont(ctx, row));
}

// PixelNorm: x / sqrt(mean over channels of x^2 + eps), no weights.
ggml_tensor* pixel_norm(ggml_context* ctx, ggml_tensor* x) {
    const int64_t w = x->ne[0], h = x->ne[1];
    ggml_tensor* t = ggml_rms_norm(ctx, nn::image_to_tokens(ctx, x), kPixelNormEps);
    return nn::tokens_to_image(ctx, t, w, h);
}

// x * (1 + scale) + shift, both per channel.
ggml_tensor* scale_shift(ggml_context* ctx, ggml_tensor* x, ggml_tensor* scale,
                         ggml_tensor* shift) {
    return ggml_add(ctx, ggml_add(ctx, x, ggml_mul(ctx, x, scale)), shift);
}

// TimestepEmbedder: 256 sinusoidal features (cos first, max period 10000), linear, SiLU,
// linear -> [dim, 1].
ggml_tensor* timestep_embed(nn::Ctx& c, ggml_tensor* t, const std::string& p, int64_t dim) {
    ggml_tensor* e = ggml_timestep_embedding(c.ctx, t, kTimestepFeatures, 10000);
    e = nn::linear(c, e, p + "linear_1", kTimestepFeatures, dim);
    return nn::linear(c, ggml_silu(c.ctx, e), p + "linear_2", dim, dim);
}

// Where one window stands: its caches and the output frames at its end the next window
// decodes again (multiplied by each x2-in-time upsampler).
struct Window {
    models::WanCausalCache* cache = nullptr;
    int64_t tail = 0;
    bool causal = false;  // the encoder: two copies of the first frame in front, none behind
};

// A 3x3x3 convolution over x [W, H, in, F] with one replicated frame on each side in time
// (in a window: the frame the previous window kept in front instead, when there is one);
// 1-pixel zero padding in space.
ggml_tensor* conv3d(nn::Ctx& c, ggml_tensor* x, const std::string& p, int64_t in, int64_t out,
                    Window& win) {
    const int64_t n = x->ne[3];
    ggml_tensor* front = nullptr;
    if (win.cache) {
        const size_t slot = win.cache->take();
        front = win.cache->in[slot];
        const int64_t end = n - win.tail, begin = std::max<int64_t>(end - 1, 0);
        if (end > begin) {
            win.cache->out[slot] = ggml_cont(c.ctx, frame_range(c.ctx, x, begin, end - begin));
        }
    }
    if (!front) front = frame_range(c.ctx, x, 0, 1);
    ggml_tensor* seq = ggml_concat(c.ctx, front, x, 3);
    if (win.causal) {
        seq = ggml_concat(c.ctx, front, seq, 3);
    } else {
        seq = ggml_concat(c.ctx, seq, frame_range(c.ctx, x, n - 1, 1), 3);
    }
    return conv3d_valid(c, seq, p + "conv.", in, out);
}

// Patches back to pixels, "b (c r q) f h w -> b c f (h q) (w r)" (r: the column within the
// patch, q: the row): swaps r and q, then depth to space.
ggml_tensor* unpatchify(ggml_context* ctx, ggml_tensor* x, int p) {
    const int64_t w = x->ne[0], h = x->ne[1], ch = x->ne[2] / (p * p), t = x->ne[3];
    x = ggml_reshape_4d(ctx, x, w * h, p, p, ch * t);      // pixels q r (c t)
    x = ggml_cont(ctx, ggml_permute(ctx, x, 0, 2, 1, 3));  // pixels r q (c t)
    x = ggml_reshape_4d(ctx, x, w, h, ch * p * p, t);
    return depth_to_space(ctx, x, ch, 1, p, false);
}

ggml_tensor* residual_group(nn::Ctx& c, const LtxVideoVaeConfig& cfg, const LtxVaeUpBlock& b,
                            ggml_tensor* x, ggml_tensor* t, Window& win) {
    const int64_t ch = b.in;
    ggml_tensor* emb = nullptr;
    if (cfg.timestep_conditioning && t) {
        emb = timestep_embed(c, t, b.prefix + "time_embedder.timestep_embedder.", 4 * ch);
        emb = ggml_reshape_2d(c.ctx, emb, ch, 4);
    }
    for (int i = 0; i < b.layers; ++i) {
        const std::string p = b.prefix + "res_blocks." + std::to_string(i) + ".";
        ggml_tensor* mod = nullptr;
        if (emb) mod = ggml_add(c.ctx, f32(c.ctx, c.W(p + "scale_shift_table", {ch, 4})), emb);
        ggml_tensor* h = pixel_norm(c.ctx, x);
        if (mod) h = scale_shift(c.ctx, h, table_row(c.ctx, mod, 1), table_row(c.ctx, mod, 0));
        h = conv3d(c, ggml_silu(c.ctx, h), p + "conv1.", ch, ch, win);
        h = pixel_norm(c.ctx, h);
        if (mod) h = scale_shift(c.ctx, h, table_row(c.ctx, mod, 3), table_row(c.ctx, mod, 2));
        h = conv3d(c, ggml_silu(c.ctx, h), p + "conv2.", ch, ch, win);
        x = ggml_add(c.ctx, x, h);
    }
    return x;
}

// Space to depth, "b c (t p1) (h p2) (w p3) -> b (c p1 p2 p3) t h w": x [W, H, C, T] ->
// [W/fs, H/fs, C*ft*fs*fs, T/ft], channel ((c * ft + it) * fs + ih) * fs + iw.
ggml_tensor* space_to_depth(ggml_context* ctx, ggml_tensor* x, int ft, int fs) {
    const int64_t W = x->ne[0], ch = x->ne[2], T = x->ne[3];
    const int64_t w = W / fs, h = x->ne[1] / fs, t = T / ft;
    x = ggml_reshape_4d(ctx, x, W, fs, h, ch * T);            // W ih h (c T)
    x = ggml_cont(ctx, ggml_permute(ctx, x, 0, 2, 1, 3));     // W h ih (c T)
    x = ggml_reshape_4d(ctx, x, fs, w, h, fs * ch * T);       // iw w h (ih c T)
    x = ggml_cont(ctx, ggml_permute(ctx, x, 2, 0, 1, 3));     // w h iw (ih c T)
    x = ggml_reshape_4d(ctx, x, w * h * fs * fs, ch, ft, t);  // (w h iw ih) c it t
    x = ggml_cont(ctx, ggml_permute(ctx, x, 0, 2, 1, 3));     // (w h iw ih) it c t
    return ggml_reshape_4d(ctx, x, w, h, fs * fs * ft * ch, t);
}

// AvgDown3D: zero frames in front to a multiple of ft, space to depth, then the mean of each
// group of in*ft*fs*fs/out consecutive channels: [W, H, in, T] -> [W/fs, H/fs, out, T'/ft].
ggml_tensor* avg_down(ggml_context* ctx, ggml_tensor* x, int64_t out, int ft, int fs) {
    const int64_t pad = (ft - x->ne[3] % ft) % ft;
    if (pad > 0) x = ggml_pad_ext(ctx, x, 0, 0, 0, 0, 0, 0, static_cast<int>(pad), 0);
    x = space_to_depth(ctx, x, ft, fs);
    const int64_t w = x->ne[0], h = x->ne[1], t = x->ne[3], group = x->ne[2] / out;
    if (group == 1) return x;
    x = ggml_reshape_4d(ctx, x, w * h, group, out, t);
    x = ggml_mean(ctx, ggml_cont(ctx, ggml_permute(ctx, x, 1, 0, 2, 3)));  // [1, wh, out, t]
    return ggml_reshape_4d(ctx, x, w, h, out, t);
}

// SpaceToDepthDownsample: the first frame repeated ft - 1 times in front; a causal
// convolution to out/(ft fs fs) channels averaged down, plus the input averaged down.
ggml_tensor* downsample(nn::Ctx& c, const LtxVaeDownBlock& b, ggml_tensor* x, Window& win) {
    for (int i = 1; i < b.factor_t; ++i) {
        x = ggml_concat(c.ctx, frame_range(c.ctx, x, 0, 1), x, 3);
    }
    const int64_t f = int64_t{b.factor_t} * b.factor_s * b.factor_s;
    ggml_tensor* skip = avg_down(c.ctx, x, b.out, b.factor_t, b.factor_s);
    ggml_tensor* h = conv3d(c, x, b.prefix + "conv.", b.in, b.out / f, win);
    return ggml_add(c.ctx, avg_down(c.ctx, h, b.out, b.factor_t, b.factor_s), skip);
}

// The encoder's blocks as the reference infers them: a downsampler's factor is the next
// residual group's width over its convolution's output width (8: time and space, 4: space,
// 2: time).
Status detect_encoder(const TensorIndex& index, LtxVideoVaeConfig& cfg) {
    const std::string e = cfg.prefix + "encoder.";
    int64_t ch = 0;
    GGDIFF_TRY(need_conv(index, e + "conv_in.", 0, &ch));
    const TensorInfo* in = conv3d_info(index, e + "conv_in.");
    if (in->shape[1] != 3 * cfg.patch * cfg.patch) {
        return Status::Error(e + "conv_in.conv.weight takes " + std::to_string(in->shape[1]) +
                             " channels, expected " + std::to_string(3 * cfg.patch * cfg.patch));
    }
    cfg.enc_in_width = ch;
    auto block = [&](int i) { return e + "down_blocks." + std::to_string(i) + "."; };
    for (int i = 0; index.has_prefix(block(i)); ++i) {
        LtxVaeDownBlock b;
        b.prefix = block(i);
        b.in = ch;
        if (index.has_prefix(b.prefix + "res_blocks.0.")) {
            while (index.has_prefix(b.prefix + "res_blocks." + std::to_string(b.layers) + ".")) {
                const std::string r = b.prefix + "res_blocks." + std::to_string(b.layers) + ".";
                int64_t out = 0;
                GGDIFF_TRY(need_conv(index, r + "conv1.", ch, &out));
                GGDIFF_TRY(need_conv(index, r + "conv2.", ch, &out));
                ++b.layers;
            }
            b.out = ch;
        } else {
            b.residual_group = false;
            int64_t conv_out = 0;
            GGDIFF_TRY(need_conv(index, b.prefix + "conv.", ch, &conv_out));
            int64_t next = 0;
            for (int j = i + 1; index.has_prefix(block(j)); ++j) {
                if (const TensorInfo* r = conv3d_info(index, block(j) + "res_blocks.0.conv1.")) {
                    next = r->shape[0];
                    break;
                }
            }
            const int64_t factor = next > 0 && next % conv_out == 0 ? next / conv_out : 0;
            if (factor != 8 && factor != 4 && factor != 2) {
                return Status::Error(
                    b.prefix + "conv.conv.weight gives " + std::to_string(conv_out) +
                    " channels: not 1/2, 1/4 or 1/8 of the next width " + std::to_string(next));
            }
            b.factor_t = factor == 4 ? 1 : 2;
            b.factor_s = factor == 2 ? 1 : 2;
            b.out = next;
        }
        ch = b.out;
        cfg.down.push_back(b);
    }
    cfg.enc_out_width = ch;
    int64_t out = 0;
    GGDIFF_TRY(need_conv(index, e + "conv_out.", ch, &out));
    if (out != cfg.latent_channels + 1) {
        return Status::Error(e + "conv_out.conv.weight gives " + std::to_string(out) +
                             " channels, expected " + std::to_string(cfg.latent_channels + 1));
    }
    return Status::Ok();
}

}  // namespace

ggml_tensor* conv3d_valid(nn::Ctx& c, ggml_tensor* seq, const std::string& p, int64_t in,
                          int64_t out) {
    ggml_tensor* w = c.W(p + "weight", {3, 3, 3, in * out});
    ggml_tensor* b = c.W(p + "bias", {out});
    const int64_t n = seq->ne[3] - 2;
    ggml_tensor* y = nullptr;
    for (int64_t t = 0; t < 3; ++t) {
        ggml_tensor* wt = ggml_view_4d(c.ctx, w, 3, 3, 1, in * out, w->nb[1], w->nb[2], w->nb[3],
                                       static_cast<size_t>(t) * w->nb[2]);
        wt = ggml_reshape_4d(c.ctx, ggml_cont(c.ctx, wt), 3, 3, in, out);
        ggml_tensor* xt = frame_range(c.ctx, seq, t, n);
        ggml_tensor* bt = t == 0 ? b : nullptr;
        ggml_tensor* yt = nullptr;
        if (cpu::enabled(c.ctx) && cpu::can_conv2d(wt, xt, bt)) {
            yt = cpu::conv2d(c.ctx, wt, xt, bt, 1, 1);
        } else {
            yt = ggml_conv_2d(c.ctx, wt, xt, 1, 1, 1, 1, 1, 1);
            if (bt) yt = ggml_add(c.ctx, yt, per_channel(c.ctx, f32(c.ctx, bt)));
        }
        y = y ? ggml_add(c.ctx, y, yt) : yt;
    }
    return y;
}

ggml_tensor* depth_to_space(ggml_context* ctx, ggml_tensor* x, int64_t ch, int ft, int fs,
                            bool drop_first) {
    const int64_t w = x->ne[0], h = x->ne[1], t = x->ne[3];
    x = ggml_reshape_4d(ctx, x, w, h, fs, fs * ft * ch * t);  // w h iw (ih it c t)
    x = ggml_cont(ctx, ggml_permute(ctx, x, 1, 2, 0, 3));     // iw w h (ih it c t)
    x = ggml_reshape_4d(ctx, x, fs * w, h, fs, ft * ch * t);  // (iw w) h ih (it c t)
    x = ggml_cont(ctx, ggml_permute(ctx, x, 0, 2, 1, 3));     // (iw w) ih h (it c t)
    x = ggml_reshape_4d(ctx, x, fs * w * fs * h, ft, ch, t);  // pixels it c t
    x = ggml_cont(ctx, ggml_permute(ctx, x, 0, 2, 1, 3));     // pixels c it t
    x = ggml_reshape_4d(ctx, x, fs * w, fs * h, ch, ft * t);
    if (drop_first && ft > 1) x = ggml_cont(ctx, frame_range(ctx, x, 1, x->ne[3] - 1));
    return x;
}

int LtxVideoVaeConfig::time_scale() const {
    int s = 1;
    for (const LtxVaeUpBlock& b : up) s *= b.factor_t;
    return s;
}

int LtxVideoVaeConfig::space_scale() const {
    int s = patch;
    for (const LtxVaeUpBlock& b : up) s *= b.factor_s;
    return s;
}

bool find_ltx_video_vae(const TensorIndex& index, std::string* prefix) {
    for (const char* p : {"first_stage_model.", "vae.", ""}) {
        const std::string s = p;
        if (index.has(s + "decoder.conv_in.conv.weight") &&
            index.has(s + "per_channel_statistics.mean-of-means")) {
            if (prefix) *prefix = s;
            return true;
        }
    }
    if (prefix) prefix->clear();
    return false;
}

Result<LtxVideoVaeConfig> detect_ltx_video_vae(const TensorIndex& index,
                                               const std::string& prefix) {
    LtxVideoVaeConfig cfg;
    cfg.prefix = prefix;
    const std::string d = prefix + "decoder.";
    const TensorInfo* conv_in = conv3d_info(index, d + "conv_in.");
    if (!conv_in) {
        return Status::Error("missing tensor " + d +
                             "conv_in.conv.weight (a 3x3x3 convolution kernel with its bias)");
    }
    cfg.latent_channels = conv_in->shape[1];
    cfg.conv_in_width = conv_in->shape[0];
    for (const char* s : {"mean-of-means", "std-of-means"}) {
        GGDIFF_TRY(
            need_shape(index, prefix + "per_channel_statistics." + s, {cfg.latent_channels}));
    }
    cfg.timestep_conditioning = index.has(d + "timestep_scale_multiplier");
    int64_t ch = cfg.conv_in_width;
    for (int i = 0;; ++i) {
        const std::string p = d + "up_blocks." + std::to_string(i) + ".";
        if (!index.has_prefix(p)) break;
        LtxVaeUpBlock b;
        b.prefix = p;
        b.in = ch;
        if (index.has_prefix(p + "res_blocks.0.")) {
            while (index.has_prefix(p + "res_blocks." + std::to_string(b.layers) + ".")) {
                const std::string r = p + "res_blocks." + std::to_string(b.layers) + ".";
                int64_t out = 0;
                GGDIFF_TRY(need_conv(index, r + "conv1.", ch, &out));
                if (out != ch) {
                    return Status::Error(r + "conv1.conv.weight gives " + std::to_string(out) +
                                         " channels, expected " + std::to_string(ch));
                }
                GGDIFF_TRY(need_conv(index, r + "conv2.", ch, &out));
                if (cfg.timestep_conditioning) {
                    GGDIFF_TRY(need_shape(index, r + "scale_shift_table", {4, ch}));
                }
                ++b.layers;
            }
            if (cfg.timestep_conditioning) {
                GGDIFF_TRY(need_embedder(index, p + "time_embedder.timestep_embedder.", 4 * ch));
            }
            b.out = ch;
        } else {
            b.residual_group = false;
            int64_t conv_out = 0;
            GGDIFF_TRY(need_conv(index, p + "conv.", ch, &conv_out));
            // The next group's width tells the reduction (else half, as the reference).
            int64_t next = 0;
            for (int j = i + 1; index.has_prefix(d + "up_blocks." + std::to_string(j) + "."); ++j) {
                const TensorInfo* r = conv3d_info(
                    index, d + "up_blocks." + std::to_string(j) + ".res_blocks.0.conv1.");
                if (r) {
                    next = r->shape[0];
                    break;
                }
            }
            if (next <= 0 || ch % next != 0) next = std::max<int64_t>(1, ch / 2);
            const int64_t factor = conv_out / next;
            if (conv_out % next != 0 || (factor != 8 && factor != 4 && factor != 2)) {
                return Status::Error(p + "conv.conv.weight gives " + std::to_string(conv_out) +
                                     " channels: not 2, 4 or 8 times the next width " +
                                     std::to_string(next));
            }
            b.factor_t = factor == 4 ? 1 : 2;
            b.factor_s = factor == 2 ? 1 : 2;
            b.out = next;
        }
        ch = b.out;
        cfg.up.push_back(b);
    }
    if (cfg.up.empty()) return Status::Error("missing tensor " + d + "up_blocks.0.*");
    cfg.out_width = ch;
    int64_t conv_out = 0;
    GGDIFF_TRY(need_conv(index, d + "conv_out.", ch, &conv_out));
    const int p = static_cast<int>(std::lround(std::sqrt(conv_out / 3.0)));
    if (p < 1 || 3 * p * p != conv_out) {
        return Status::Error(d + "conv_out.conv.weight gives " + std::to_string(conv_out) +
                             " channels, not 3 x patch x patch");
    }
    cfg.patch = p;
    if (cfg.timestep_conditioning) {
        GGDIFF_TRY(need_shape(index, d + "timestep_scale_multiplier", {1}));
        GGDIFF_TRY(need_shape(index, d + "last_scale_shift_table", {2, ch}));
        GGDIFF_TRY(need_embedder(index, d + "last_time_embedder.timestep_embedder.", 2 * ch));
    }
    cfg.has_encoder = index.has_prefix(prefix + "encoder.");
    if (cfg.has_encoder) GGDIFF_TRY(detect_encoder(index, cfg));
    return cfg;
}

int ltx_video_frames(const LtxVideoVaeConfig& cfg, int latent_frames) {
    return latent_frames <= 0 ? 0 : 1 + cfg.time_scale() * (latent_frames - 1);
}

int ltx_latent_frames(const LtxVideoVaeConfig& cfg, int video_frames) {
    const int s = cfg.time_scale();
    if (video_frames < 1 || (video_frames - 1) % s != 0) return 0;
    return 1 + (video_frames - 1) / s;
}

ggml_tensor* build_ltx_decode(nn::Ctx& c, const LtxVideoVaeConfig& cfg, ggml_tensor* z,
                              ggml_tensor* timestep, int first, models::WanCausalCache* cache,
                              int overlap) {
    if (cache) cache->next = 0;
    Window win{cache, cache ? overlap : 0};
    const std::string& pre = cfg.prefix;
    const std::string d = pre + "decoder.";
    const int64_t lc = cfg.latent_channels;
    // Un-normalize: the diffusion latent times std plus mean, per channel.
    ggml_tensor* x = ggml_mul(
        c.ctx, z,
        per_channel(c.ctx, f32(c.ctx, c.W(pre + "per_channel_statistics.std-of-means", {lc}))));
    x = ggml_add(
        c.ctx, x,
        per_channel(c.ctx, f32(c.ctx, c.W(pre + "per_channel_statistics.mean-of-means", {lc}))));
    ggml_tensor* t = nullptr;
    if (cfg.timestep_conditioning) {
        ggml_tensor* mult = f32(c.ctx, c.W(d + "timestep_scale_multiplier", {1}));
        t = ggml_mul(c.ctx, ggml_reshape_1d(c.ctx, timestep, 1), mult);
    }
    x = conv3d(c, x, d + "conv_in.", lc, cfg.conv_in_width, win);
    for (const LtxVaeUpBlock& b : cfg.up) {
        if (b.residual_group) {
            x = residual_group(c, cfg, b, x, t, win);
            continue;
        }
        const int64_t conv_out = b.out * b.factor_t * b.factor_s * b.factor_s;
        x = conv3d(c, x, b.prefix + "conv.", b.in, conv_out, win);
        x = depth_to_space(c.ctx, x, b.out, b.factor_t, b.factor_s, first == 0);
        win.tail *= b.factor_t;
    }
    const int64_t ch = cfg.out_width;
    x = pixel_norm(c.ctx, x);
    if (cfg.timestep_conditioning) {
        ggml_tensor* emb =
            timestep_embed(c, t, d + "last_time_embedder.timestep_embedder.", 2 * ch);
        ggml_tensor* mod = ggml_add(c.ctx, f32(c.ctx, c.W(d + "last_scale_shift_table", {ch, 2})),
                                    ggml_reshape_2d(c.ctx, emb, ch, 2));
        x = scale_shift(c.ctx, x, table_row(c.ctx, mod, 1), table_row(c.ctx, mod, 0));
    }
    x = conv3d(c, ggml_silu(c.ctx, x), d + "conv_out.", ch, 3 * cfg.patch * cfg.patch, win);
    if (win.tail > 0) x = ggml_cont(c.ctx, frame_range(c.ctx, x, 0, x->ne[3] - win.tail));
    return unpatchify(c.ctx, x, cfg.patch);
}

ggml_tensor* build_ltx_encode(nn::Ctx& c, const LtxVideoVaeConfig& cfg, ggml_tensor* video) {
    Window win;
    win.causal = true;
    const std::string e = cfg.prefix + "encoder.";
    const int p = cfg.patch;
    // Patches, "b c f (h q) (w r) -> b (c r q) f h w": space to depth, then r before q.
    ggml_tensor* x = space_to_depth(c.ctx, video, 1, p);
    const int64_t w = x->ne[0], h = x->ne[1], t = x->ne[3];
    x = ggml_reshape_4d(c.ctx, x, w * h, p, p, 3 * t);  // pixels iw ih (c t)
    x = ggml_cont(c.ctx, ggml_permute(c.ctx, x, 0, 2, 1, 3));
    x = ggml_reshape_4d(c.ctx, x, w, h, 3 * p * p, t);
    x = conv3d(c, x, e + "conv_in.", 3 * p * p, cfg.enc_in_width, win);
    for (const LtxVaeDownBlock& b : cfg.down) {
        x = b.residual_group ? residual_group(c, cfg, b, x, nullptr, win)
                             : downsample(c, b, x, win);
    }
    x = ggml_silu(c.ctx, pixel_norm(c.ctx, x));
    x = conv3d(c, x, e + "conv_out.", cfg.enc_out_width, cfg.latent_channels + 1, win);
    // The posterior mean (the first latent_channels channels), normalized per channel.
    const int64_t lc = cfg.latent_channels;
    x = ggml_cont(c.ctx, ggml_view_4d(c.ctx, x, x->ne[0], x->ne[1], lc, x->ne[3], x->nb[1],
                                      x->nb[2], x->nb[3], 0));
    const std::string st = cfg.prefix + "per_channel_statistics.";
    x = ggml_sub(c.ctx, x, per_channel(c.ctx, f32(c.ctx, c.W(st + "mean-of-means", {lc}))));
    return ggml_div(c.ctx, x, per_channel(c.ctx, f32(c.ctx, c.W(st + "std-of-means", {lc}))));
}

Result<HostTensor> ltx_encode_video(const LtxVideoVaeConfig& cfg, const HostTensor& video,
                                    const models::WanGraphRun& run) {
    if (!cfg.has_encoder) {
        return Status::Error("this LTX VAE has no encoder weights: encoding needs a full VAE");
    }
    const int s = cfg.space_scale();
    if (video.dim(2) != 3 || video.dim(0) % s != 0 || video.dim(1) % s != 0 || video.dim(3) < 1) {
        return Status::Error("LTX video VAE: the encoder takes RGB frames of a multiple of " +
                             std::to_string(s) + " pixels per side, got " +
                             std::to_string(video.dim(0)) + "x" + std::to_string(video.dim(1)) +
                             "x" + std::to_string(video.dim(2)));
    }
    const int64_t frames = 1 + (video.dim(3) - 1) / cfg.time_scale() * cfg.time_scale();
    HostTensor x = video;
    if (frames != video.dim(3)) {
        GGDIFF_LOG_WARN("LTX video VAE: encoding the first %lld of %lld frames (1 + %d n)",
                        static_cast<long long>(frames), static_cast<long long>(video.dim(3)),
                        cfg.time_scale());
        x = HostTensor({video.dim(0), video.dim(1), 3, frames});
        std::copy(video.data.begin(), video.data.begin() + x.numel(), x.data.begin());
    }
    auto r = run([&](nn::Ctx& c, const std::function<ggml_tensor*(const HostTensor&)>& input) {
        return std::vector<ggml_tensor*>{build_ltx_encode(c, cfg, input(x))};
    });
    if (!r.ok()) return r.status().with_context("LTX video VAE encode");
    if (r->size() != 1) return Status::Error("LTX video VAE: the encoder returned nothing");
    return std::move((*r)[0]);
}

std::vector<LtxWindow> ltx_temporal_windows(int latent_frames, LtxTemporalTiling tiling) {
    std::vector<LtxWindow> out;
    if (latent_frames <= 0) return out;
    const int frames = std::max(1, tiling.frames);
    int overlap = std::max(0, tiling.overlap);
    if (overlap >= frames) {
        GGDIFF_LOG_WARN("temporal tile overlap %d >= %d tile frames: using overlap %d", overlap,
                        frames, frames - 1);
        overlap = frames - 1;
    }
    if (latent_frames > 1 && overlap >= latent_frames) overlap = latent_frames - 1;
    const int stride = std::max(1, frames - overlap);
    for (int first = 0; first < latent_frames - overlap; first += stride) {
        const int end = std::min(latent_frames, first + frames);
        out.push_back({first, end - first, end < latent_frames ? overlap : 0});
    }
    return out;
}

Result<HostTensor> ltx_decode_video(const LtxVideoVaeConfig& cfg, const HostTensor& z,
                                    const models::WanGraphRun& run, LtxTemporalTiling tiling) {
    if (z.dim(2) != cfg.latent_channels || z.dim(3) < 1) {
        return Status::Error("LTX video VAE: a latent needs " +
                             std::to_string(cfg.latent_channels) + " channels per frame, got " +
                             std::to_string(z.dim(2)));
    }
    const int64_t T = z.dim(3);
    HostTensor ts({1}, cfg.decode_timestep);
    std::vector<LtxWindow> windows;
    if (tiling.enabled && T > 1) {
        windows = ltx_temporal_windows(static_cast<int>(T), tiling);
    } else {
        windows.push_back({0, static_cast<int>(T), 0});
    }
    const bool tiled = windows.size() > 1 || (tiling.enabled && T > 1);
    const int64_t per = z.dim(0) * z.dim(1) * z.dim(2);
    std::vector<HostTensor> caches, outs;
    int64_t total = 0;
    for (const LtxWindow& win : windows) {
        HostTensor part({z.dim(0), z.dim(1), z.dim(2), win.count});
        std::copy(z.data.begin() + win.first * per, z.data.begin() + (win.first + win.count) * per,
                  part.data.begin());
        std::vector<size_t> produced;
        auto r = run([&](nn::Ctx& c, const std::function<ggml_tensor*(const HostTensor&)>& input) {
            models::WanCausalCache cache;
            for (const HostTensor& h : caches) cache.in.push_back(h.numel() ? input(h) : nullptr);
            cache.out.assign(cache.in.size(), nullptr);
            ggml_tensor* zt = input(part);
            ggml_tensor* tt = cfg.timestep_conditioning ? input(ts) : nullptr;
            std::vector<ggml_tensor*> list{
                build_ltx_decode(c, cfg, zt, tt, win.first, tiled ? &cache : nullptr, win.overlap)};
            produced.clear();
            for (size_t s = 0; s < cache.out.size(); ++s) {
                if (!cache.out[s]) continue;
                list.push_back(cache.out[s]);
                produced.push_back(s);
            }
            return list;
        });
        if (!r.ok()) return r.status().with_context("LTX video VAE decode");
        std::vector<HostTensor>& got = *r;
        if (got.size() != produced.size() + 1) {
            return Status::Error("LTX video VAE: a window graph returned " +
                                 std::to_string(got.size()) + " outputs, expected " +
                                 std::to_string(produced.size() + 1));
        }
        for (size_t k = 0; k < produced.size(); ++k) {
            if (caches.size() <= produced[k]) caches.resize(produced[k] + 1);
            caches[produced[k]] = std::move(got[k + 1]);
        }
        total += got[0].dim(3);
        outs.push_back(std::move(got[0]));
    }
    if (outs.size() == 1) return std::move(outs[0]);
    const HostTensor& f = outs.front();
    HostTensor all({f.dim(0), f.dim(1), f.dim(2), total});
    size_t at = 0;
    for (const HostTensor& o : outs) {
        std::copy(o.data.begin(), o.data.end(), all.data.begin() + static_cast<ptrdiff_t>(at));
        at += o.data.size();
    }
    return all;
}

}  // namespace ggdiff::ltx
