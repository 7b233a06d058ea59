#include "families/wan/dit.h"

#include <ggml.h>

#include <algorithm>
#include <cmath>

#include "core/log.h"
#include "io/checkpoint_file.h"
#include "nn/dit.h"
#include "nn/layers.h"

namespace ggdiff::models {

namespace {

const TensorInfo* find_rank(const TensorIndex& index, const std::string& name, size_t rank) {
    const TensorInfo* t = index.find(name);
    return t && t->shape.size() == rank ? t : nullptr;
}

// A 3-D convolution kernel [out, in, kt, kh, kw] as the file holds it: five dimensions in
// safetensors; four in a GGUF, whose tensors have at most four ([out * in, kt, kh, kw]), where
// `out` (the DiT's width, or 0: read from the first block's query projection) splits the first.
std::vector<int64_t> conv3d_shape(const TensorIndex& index, const std::string& prefix,
                                  const std::string& name, int64_t out) {
    const TensorInfo* t = index.find(prefix + name);
    if (!t) return {};
    if (t->shape.size() == 5) return t->shape;
    if (t->shape.size() != 4) return {};
    if (out <= 0) {
        const TensorInfo* q = find_rank(index, prefix + "blocks.0.self_attn.q.weight", 2);
        out = q ? q->shape[0] : 0;
    }
    if (out <= 0 || t->shape[0] % out) return {};
    return {out, t->shape[0] / out, t->shape[1], t->shape[2], t->shape[3]};
}

std::string block_name(const WanConfig& cfg, int64_t i) {
    return cfg.prefix + "blocks." + std::to_string(i) + ".";
}

// A weight as F32 (the modulation tables are added to activations).
ggml_tensor* f32(ggml_context* ctx, ggml_tensor* t) {
    return t->type == GGML_TYPE_F32 ? t : ggml_cast(ctx, t, GGML_TYPE_F32);
}

// Chunk i of a [dim, k, N] modulation tensor as [dim, 1, N].
ggml_tensor* chunk(ggml_context* ctx, ggml_tensor* m, int i) {
    return ggml_cont(ctx, ggml_view_3d(ctx, m, m->ne[0], 1, m->ne[2], m->nb[1], m->nb[2],
                                       static_cast<size_t>(i) * m->nb[1]));
}

// Tokens [w, L, N] by frame: with one modulation per frame (frames > 1), activations are
// split to [w, L / frames, frames, N] and the modulation vectors [w, 1, frames * N] to
// [w, 1, frames, N], so that each frame's tokens take their frame's (tokens are frame-major).
struct FrameSplit {
    ggml_context* ctx;
    int64_t frames;
    ggml_tensor* split(ggml_tensor* t) const {
        return frames == 1 ? t
                           : ggml_reshape_4d(ctx, t, t->ne[0], t->ne[1] / frames, frames, t->ne[2]);
    }
    ggml_tensor* join(ggml_tensor* t) const {
        return frames == 1 ? t : ggml_reshape_3d(ctx, t, t->ne[0], t->ne[1] * frames, t->ne[3]);
    }
    ggml_tensor* mod(ggml_tensor* m) const {
        return frames == 1 ? m : ggml_reshape_4d(ctx, m, m->ne[0], 1, frames, m->ne[2] / frames);
    }
};

// Linear, then RMSNorm over the whole width (q / k of Wan's attention).
ggml_tensor* normed(nn::Ctx& c, const WanConfig& cfg, ggml_tensor* x, const std::string& p,
                    const char* proj, const char* norm, int64_t in) {
    ggml_tensor* y = nn::linear(c, x, p + proj, in, cfg.width);
    return nn::rms_norm(c, y, p + norm + ".weight", cfg.width, cfg.eps);
}

ggml_tensor* block(nn::Ctx& c, const WanConfig& cfg, const std::string& p, ggml_tensor* x,
                   ggml_tensor* e0, ggml_tensor* context, ggml_tensor* cos, ggml_tensor* sin,
                   ggml_tensor* image, ggml_tensor* context_mask) {
    ggml_context* ctx = c.ctx;
    const int64_t w = cfg.width;
    const int heads = static_cast<int>(cfg.heads);
    // e0 [w, 6, N * F] + the block's table [w, 6]: shift, scale, gate of attention, then of
    // FFN; F modulations per item when each frame has its own timestep (TI2V's held frames).
    const FrameSplit fs{ctx, e0->ne[2] / x->ne[2]};
    ggml_tensor* m = ggml_add(ctx, e0, f32(ctx, c.W(p + "modulation", {w, 6})));
    ggml_tensor* mod[6];
    for (int i = 0; i < 6; ++i) mod[i] = fs.mod(chunk(ctx, m, i));

    const std::string sa = p + "self_attn.";
    ggml_tensor* y =
        fs.join(nn::modulate(ctx, fs.split(nn::layer_norm_plain(ctx, x, cfg.eps)), mod[0], mod[1]));
    ggml_tensor* q = normed(c, cfg, y, sa, "q", "norm_q", w);
    ggml_tensor* k = normed(c, cfg, y, sa, "k", "norm_k", w);
    ggml_tensor* v = nn::linear(c, y, sa + "v", w, w);
    y = nn::linear(c, nn::rope_attention(ctx, q, k, v, cos, sin, heads), sa + "o", w, w);
    x = ggml_add(ctx, x, fs.join(ggml_mul(ctx, fs.split(y), mod[2])));

    const std::string ca = p + "cross_attn.";
    y = cfg.cross_attn_norm ? nn::layer_norm(c, x, p + "norm3", w, cfg.eps) : x;
    q = normed(c, cfg, y, ca, "q", "norm_q", w);
    k = normed(c, cfg, context, ca, "k", "norm_k", w);
    v = nn::linear(c, context, ca + "v", w, w);
    y = nn::attention(ctx, q, k, v, heads, false, context_mask);
    if (image) {
        // Image-to-video: the same queries attend to the image tokens on their own keys.
        k = normed(c, cfg, image, ca, "k_img", "norm_k_img", w);
        v = nn::linear(c, image, ca + "v_img", w, w);
        y = ggml_add(ctx, y, nn::attention(ctx, q, k, v, heads));
    }
    y = nn::linear(c, y, ca + "o", w, w);
    x = ggml_add(ctx, x, y);

    y = fs.join(nn::modulate(ctx, fs.split(nn::layer_norm_plain(ctx, x, cfg.eps)), mod[3], mod[4]));
    y = ggml_gelu(ctx, nn::linear(c, y, p + "ffn.0", w, cfg.ffn));
    y = nn::linear(c, y, p + "ffn.2", cfg.ffn, w);
    return ggml_add(ctx, x, fs.join(ggml_mul(ctx, fs.split(y), mod[5])));
}

// [w*h, A, B, N] with the middle axes swapped: planes a * B + b <-> b * A + a.
ggml_tensor* swap_planes(ggml_context* ctx, ggml_tensor* x, int64_t w, int64_t h, int64_t a,
                         int64_t b, int64_t n) {
    x = ggml_reshape_4d(ctx, x, w * h, b, a, n);
    x = ggml_cont(ctx, ggml_permute(ctx, x, 0, 2, 1, 3));  // [w*h, a, b, n]
    return ggml_reshape_4d(ctx, x, w, h, a * b, n);
}

// [W, H, C*T, N] (frames as x's) -> tokens [width, gw*gh*T, N] through the 1x2x2 3-D
// convolution `name` (kernel [width, C, 1, 2, 2] as a linear over each patch, plus bias).
ggml_tensor* patch_tokens(nn::Ctx& c, const WanConfig& cfg, ggml_tensor* x, int64_t T,
                          const std::string& name) {
    ggml_context* ctx = c.ctx;
    const int64_t N = x->ne[3], cin = x->ne[2] / T, w = cfg.width;
    x = nn::pad_to_patch(ctx, x, 2);
    const int64_t pw = x->ne[0], ph = x->ne[1], gw = pw / 2, gh = ph / 2;
    x = swap_planes(ctx, x, pw, ph, cin, T, N);
    x = ggml_reshape_4d(ctx, x, pw, ph, cin, T * N);
    x = nn::patchify(ctx, x, 2);
    x = ggml_reshape_3d(ctx, x, 4 * cin, gw * gh * T, N);
    ggml_tensor* pk = c.W(name + ".weight", {2, 2, 1, cin * w});
    x = ggml_mul_mat(ctx, ggml_reshape_2d(ctx, pk, 4 * cin, w), x);
    return ggml_add(ctx, x, f32(ctx, c.W(name + ".bias", {w})));
}

// VACE block n on the control stream `vc`: block 0 first adds before_proj(vc) to the main
// stream's tokens after patch embedding (x0); returns the block's output (the next block's
// stream) in `vc` and its after_proj (what the main stream gets) as the result.
ggml_tensor* vace_block(nn::Ctx& c, const WanConfig& cfg, int64_t n, ggml_tensor*& vc,
                        ggml_tensor* x0, ggml_tensor* e0, ggml_tensor* context, ggml_tensor* cos,
                        ggml_tensor* sin, ggml_tensor* image, ggml_tensor* context_mask) {
    const std::string p = cfg.prefix + "vace_blocks." + std::to_string(n) + ".";
    const int64_t w = cfg.width;
    if (n == 0) vc = ggml_add(c.ctx, x0, nn::linear(c, vc, p + "before_proj", w, w));
    vc = block(c, cfg, p, vc, e0, context, cos, sin, image, context_mask);
    return nn::linear(c, vc, p + "after_proj", w, w);
}

}  // namespace

WanContext compact_wan_context(const std::vector<const std::vector<float>*>& items, int64_t width) {
    // Per item: the rows that are not all zero, in order, then one zero row for all the rest.
    std::vector<std::vector<int64_t>> kept(items.size());
    std::vector<int64_t> zeros(items.size(), 0);
    WanContext out;
    for (size_t i = 0; i < items.size(); ++i) {
        const std::vector<float>& t = *items[i];
        const int64_t rows = static_cast<int64_t>(t.size()) / width;
        for (int64_t r = 0; r < rows; ++r) {
            const auto row = t.begin() + r * width;
            if (std::all_of(row, row + width, [](float v) { return v == 0.0f; })) {
                ++zeros[i];
            } else {
                kept[i].push_back(r);
            }
        }
        out.rows = std::max(out.rows, static_cast<int64_t>(kept[i].size()) + (zeros[i] > 0));
    }
    const size_t n = items.size();
    out.tokens.assign(static_cast<size_t>(width * out.rows) * n, 0.0f);
    out.mask.assign(static_cast<size_t>(out.rows) * n, -INFINITY);
    for (size_t i = 0; i < n; ++i) {
        float* dst = out.tokens.data() + static_cast<int64_t>(i) * width * out.rows;
        float* mask = out.mask.data() + static_cast<int64_t>(i) * out.rows;
        int64_t r = 0;
        for (int64_t src : kept[i]) {
            std::copy_n(items[i]->begin() + src * width, width, dst + r * width);
            mask[r++] = 0.0f;
        }
        if (zeros[i] > 0) mask[r] = std::log(static_cast<float>(zeros[i]));  // the zero row
    }
    return out;
}

int64_t wan_vace_block_after(const WanConfig& cfg, int64_t n) {
    return n * (cfg.layers / std::max<int64_t>(1, cfg.vace_layers));
}

std::string WanConfig::size_name() const {
    if (width == 1536) return "1.3B";
    if (width == 5120) return "14B";
    if (width == 3072) return "5B";
    return std::to_string(width) + " wide";
}

bool is_wan_dit(const TensorIndex& index, const std::string& prefix) {
    return index.has(prefix + "patch_embedding.weight") &&
           index.has(prefix + "blocks.0.cross_attn.q.weight");
}

Result<WanConfig> detect_wan_dit(const TensorIndex& index, const std::string& prefix) {
    WanConfig cfg;
    cfg.prefix = prefix;
    const std::vector<int64_t> patch = conv3d_shape(index, prefix, "patch_embedding.weight", 0);
    if (patch.empty()) {
        return Status::Error(
            "missing tensor " + prefix +
            "patch_embedding.weight (a 3-D convolution [width, channels, 1, 2, 2])");
    }
    if (patch[2] != 1 || patch[3] != 2 || patch[4] != 2) {
        return Status::Error(prefix + "patch_embedding.weight: patches of " +
                             shape_string({patch[2], patch[3], patch[4]}) + " (Wan uses 1x2x2)");
    }
    cfg.width = patch[0];
    cfg.in_channels = patch[1];
    if (cfg.width % cfg.head_dim) {
        return Status::Error(prefix + "patch_embedding.weight: a width of " +
                             std::to_string(cfg.width) + " is not whole heads of 128");
    }
    cfg.heads = cfg.width / cfg.head_dim;
    auto need = [&](const std::string& name, int64_t rows, int64_t cols,
                    const TensorInfo** out) -> Status {
        const TensorInfo* t = find_rank(index, prefix + name, 2);
        if (!t) return Status::Error("missing tensor " + prefix + name);
        if ((rows > 0 && t->shape[0] != rows) || (cols > 0 && t->shape[1] != cols)) {
            return Status::Error(
                prefix + name + " has shape " + shape_string(t->shape) + ", expected " +
                shape_string({rows > 0 ? rows : t->shape[0], cols > 0 ? cols : t->shape[1]}) +
                " for a Wan DiT " + std::to_string(cfg.width) + " wide");
        }
        if (out) *out = t;
        return Status::Ok();
    };
    const TensorInfo *text0, *time0, *ffn0, *head;
    GGDIFF_TRY(need("text_embedding.0.weight", cfg.width, -1, &text0));
    cfg.text_width = text0->shape[1];
    GGDIFF_TRY(need("text_embedding.2.weight", cfg.width, cfg.width, nullptr));
    GGDIFF_TRY(need("time_embedding.0.weight", cfg.width, -1, &time0));
    cfg.freq_dim = time0->shape[1];
    if (cfg.freq_dim % 2) {
        return Status::Error(prefix + "time_embedding.0.weight: an odd timestep embedding width");
    }
    GGDIFF_TRY(need("time_embedding.2.weight", cfg.width, cfg.width, nullptr));
    GGDIFF_TRY(need("time_projection.1.weight", 6 * cfg.width, cfg.width, nullptr));
    GGDIFF_TRY(need("head.head.weight", -1, cfg.width, &head));
    if (head->shape[0] % 4) {
        return Status::Error(prefix + "head.head.weight: " + std::to_string(head->shape[0]) +
                             " outputs are not whole 1x2x2 patches");
    }
    cfg.out_channels = head->shape[0] / 4;
    int64_t n = 0;
    while (index.has(block_name(cfg, n) + "self_attn.q.weight")) ++n;
    if (n == 0) return Status::Error("missing tensor " + block_name(cfg, 0) + "self_attn.q.weight");
    cfg.layers = n;
    const std::string b0 = "blocks.0.";
    GGDIFF_TRY(need(b0 + "ffn.0.weight", -1, cfg.width, &ffn0));
    cfg.ffn = ffn0->shape[0];
    for (const char* a : {"self_attn.", "cross_attn."}) {
        for (const char* l : {"q", "k", "v", "o"}) {
            GGDIFF_TRY(need(b0 + a + l + ".weight", cfg.width, cfg.width, nullptr));
        }
    }
    GGDIFF_TRY(need(b0 + "ffn.2.weight", cfg.width, cfg.ffn, nullptr));
    cfg.cross_attn_norm = index.has(prefix + b0 + "norm3.weight");
    cfg.image_embedding = index.has_prefix(prefix + "img_emb.");
    if (cfg.image_embedding) {
        const TensorInfo* proj1;
        GGDIFF_TRY(need("img_emb.proj.1.weight", -1, -1, &proj1));
        cfg.image_width = proj1->shape[1];
        GGDIFF_TRY(need("img_emb.proj.1.weight", cfg.image_width, cfg.image_width, nullptr));
        GGDIFF_TRY(need("img_emb.proj.3.weight", cfg.width, cfg.image_width, nullptr));
        GGDIFF_TRY(need(b0 + "cross_attn.k_img.weight", cfg.width, cfg.width, nullptr));
        GGDIFF_TRY(need(b0 + "cross_attn.v_img.weight", cfg.width, cfg.width, nullptr));
        const TensorInfo* pos = index.find(prefix + "img_emb.emb_pos");
        if (pos) {
            if (pos->shape.empty() || pos->shape.back() != cfg.image_width) {
                return Status::Error(prefix + "img_emb.emb_pos has shape " +
                                     shape_string(pos->shape) + ", expected [1, tokens, " +
                                     std::to_string(cfg.image_width) + "]");
            }
            cfg.image_positions = pos->shape.size() >= 2 ? pos->shape[pos->shape.size() - 2] : 1;
        }
    }
    while (index.has_prefix(prefix + "vace_blocks." + std::to_string(cfg.vace_layers) + ".")) {
        ++cfg.vace_layers;
    }
    if (cfg.vace_layers > 0) {
        const std::vector<int64_t> vp =
            conv3d_shape(index, prefix, "vace_patch_embedding.weight", cfg.width);
        if (vp.empty()) {
            return Status::Error("missing tensor " + prefix +
                                 "vace_patch_embedding.weight (VACE: a 3-D convolution [width, "
                                 "channels, 1, 2, 2])");
        }
        if (vp[0] != cfg.width || vp[2] != 1 || vp[3] != 2 || vp[4] != 2) {
            return Status::Error(prefix + "vace_patch_embedding.weight has shape " +
                                 shape_string(vp) + ", expected [" + std::to_string(cfg.width) +
                                 ", channels, 1, 2, 2]");
        }
        cfg.vace_in_channels = vp[1];
        // VACE block n follows main block n * (layers / vace_layers): every main block
        // index that is a multiple of the step takes one, so their count must match.
        const int64_t step = cfg.layers / cfg.vace_layers;
        if (step == 0 || (cfg.layers + step - 1) / step != cfg.vace_layers) {
            return Status::Error(string_format(
                "%svace_blocks: %lld VACE blocks do not spread evenly over %lld blocks",
                prefix.c_str(), (long long)cfg.vace_layers, (long long)cfg.layers));
        }
        GGDIFF_TRY(need("vace_blocks.0.before_proj.weight", cfg.width, cfg.width, nullptr));
        for (int64_t n = 0; n < cfg.vace_layers; ++n) {
            const std::string vb = "vace_blocks." + std::to_string(n) + ".";
            GGDIFF_TRY(need(vb + "after_proj.weight", cfg.width, cfg.width, nullptr));
            GGDIFF_TRY(need(vb + "ffn.0.weight", cfg.ffn, cfg.width, nullptr));
        }
    }
    // Each head: frame, row and column dimensions (44 / 42 / 42 for 128).
    const int d = static_cast<int>(cfg.head_dim);
    cfg.axes_dim = {d - 4 * (d / 6), 2 * (d / 6), 2 * (d / 6)};
    return cfg;
}

WanRope wan_rope(const WanConfig& cfg, int64_t frames, int64_t grid_h, int64_t grid_w) {
    std::vector<float> ids;
    ids.reserve(static_cast<size_t>(3 * frames * grid_h * grid_w));
    for (int64_t t = 0; t < frames; ++t) {
        for (int64_t y = 0; y < grid_h; ++y) {
            for (int64_t x = 0; x < grid_w; ++x) {
                ids.push_back(static_cast<float>(t));
                ids.push_back(static_cast<float>(y));
                ids.push_back(static_cast<float>(x));
            }
        }
    }
    nn::RopeTable table = nn::rope_table(ids, cfg.axes_dim, cfg.theta);
    WanRope r;
    r.cos = std::move(table.cos);
    r.sin = std::move(table.sin);
    r.pairs = table.pairs;
    r.tokens = table.tokens;
    return r;
}

ggml_tensor* build_wan_block(nn::Ctx& c, const WanConfig& cfg, int64_t index, ggml_tensor* x,
                             ggml_tensor* e0, ggml_tensor* context, ggml_tensor* cos,
                             ggml_tensor* sin, ggml_tensor* image, ggml_tensor* context_mask) {
    return block(c, cfg, block_name(cfg, index), x, e0, context, cos, sin, image, context_mask);
}

ggml_tensor* build_wan(nn::Ctx& c, const WanConfig& cfg, ggml_tensor* x, int64_t frames,
                       ggml_tensor* timesteps, ggml_tensor* context, ggml_tensor* cos,
                       ggml_tensor* sin, const WanExtras& extras) {
    ggml_context* ctx = c.ctx;
    const std::string& p = cfg.prefix;
    const int64_t W = x->ne[0], H = x->ne[1], N = x->ne[3], T = frames;
    const int64_t w = cfg.width;

    // [W, H, C*T, N] -> frames as batch items [W', H', C, T*N] -> tokens [4C, gw*gh*T, N].
    const int64_t pw = W + W % 2, ph = H + H % 2, gw = pw / 2, gh = ph / 2;
    x = patch_tokens(c, cfg, x, T, p + "patch_embedding");

    ggml_tensor* e = ggml_timestep_embedding(ctx, timesteps, static_cast<int>(cfg.freq_dim), 10000);
    e = nn::linear(c, e, p + "time_embedding.0", cfg.freq_dim, w);
    e = nn::linear(c, ggml_silu(ctx, e), p + "time_embedding.2", w, w);  // [w, N]
    ggml_tensor* e0 = nn::linear(c, ggml_silu(ctx, e), p + "time_projection.1", w, 6 * w);
    e0 = ggml_reshape_3d(ctx, e0, w, 6, e0->ne[1]);  // [w, 6, N * F]

    ggml_tensor* txt = nn::linear(c, context, p + "text_embedding.0", cfg.text_width, w);
    txt = nn::linear(c, ggml_gelu(ctx, txt), p + "text_embedding.2", w, w);

    // img_emb: LayerNorm, Linear, GELU, Linear, LayerNorm over the CLIP tokens (FLF2V first
    // adds its position table to the first and last frames' tokens).
    ggml_tensor* img = nullptr;
    if (cfg.image_embedding && extras.image) {
        img = extras.image;
        const int64_t iw = cfg.image_width;
        if (cfg.image_positions > 0) {
            const int64_t n = std::min(img->ne[1], cfg.image_positions);
            ggml_tensor* pos = f32(ctx, c.W(p + "img_emb.emb_pos", {iw, cfg.image_positions, 1}));
            img = ggml_view_3d(ctx, img, iw, n, img->ne[2], img->nb[1], img->nb[2], 0);
            img = ggml_add(ctx, img, ggml_view_2d(ctx, pos, iw, n, pos->nb[1], 0));
        }
        img = nn::layer_norm(c, img, p + "img_emb.proj.0", iw, 1e-5f);
        img = nn::linear(c, img, p + "img_emb.proj.1", iw, iw);
        img = nn::linear(c, ggml_gelu(ctx, img), p + "img_emb.proj.3", iw, w);
        img = nn::layer_norm(c, img, p + "img_emb.proj.4", w, 1e-5f);
    }

    // VACE: the control context's tokens, a stream of their own beside the main one.
    ggml_tensor* vc = nullptr;
    ggml_tensor* x0 = x;
    if (cfg.vace_layers > 0) {
        GGML_ASSERT(extras.vace && extras.vace->ne[2] == cfg.vace_in_channels * T);
        vc = patch_tokens(c, cfg, extras.vace, T, p + "vace_patch_embedding");
    }
    int64_t next_vace = 0;
    for (int64_t i = 0; i < cfg.layers; ++i) {
        x = block(c, cfg, block_name(cfg, i), x, e0, txt, cos, sin, img, extras.context_mask);
        if (next_vace < cfg.vace_layers && wan_vace_block_after(cfg, next_vace) == i) {
            ggml_tensor* skip = vace_block(c, cfg, next_vace++, vc, x0, e0, txt, cos, sin, img,
                                           extras.context_mask);
            x = ggml_add(ctx, x, ggml_scale(ctx, skip, extras.vace_strength));
        }
    }

    // Head: e [w, N * F] + head.modulation [w, 2] -> shift, scale.
    const FrameSplit fs{ctx, e->ne[1] / N};
    ggml_tensor* he = ggml_reshape_3d(ctx, e, w, 1, e->ne[1]);
    he = ggml_repeat(ctx, he, ggml_new_tensor_3d(ctx, GGML_TYPE_F32, w, 2, e->ne[1]));
    he = ggml_add(ctx, he, f32(ctx, c.W(p + "head.modulation", {w, 2})));
    x = fs.join(nn::modulate(ctx, fs.split(nn::layer_norm_plain(ctx, x, cfg.eps)),
                             fs.mod(chunk(ctx, he, 0)), fs.mod(chunk(ctx, he, 1))));
    const int64_t co = cfg.out_channels;
    x = nn::linear(c, x, p + "head.head", w, 4 * co);  // features (row, column, channel)

    // Back to the (channel, row, column) feature order nn::unpatchify takes, then frames.
    x = ggml_reshape_4d(ctx, x, co, 4, gw * gh * T, N);
    x = ggml_cont(ctx, ggml_permute(ctx, x, 1, 0, 2, 3));  // [4, co, ...]
    x = ggml_reshape_3d(ctx, x, 4 * co, gw * gh, T * N);
    x = nn::unpatchify(ctx, x, gw, gh, 2);  // [pw, ph, co, T*N]
    x = swap_planes(ctx, ggml_reshape_4d(ctx, x, pw, ph, co * T, N), pw, ph, T, co, N);
    return nn::crop_latent(ctx, x, W, H);
}

}  // namespace ggdiff::models
