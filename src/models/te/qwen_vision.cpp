#include "models/te/qwen_vision.h"

#include <ggml.h>

#include <algorithm>
#include <cmath>

#include "core/log.h"
#include "io/name_util.h"
#include "nn/dit.h"
#include "nn/layers.h"

namespace ggdiff::models {

namespace {

constexpr const char* kPatchEmbed = "patch_embed.proj.";

std::string shape_text(const std::vector<int64_t>& s) {
    std::string out = "[";
    for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
    return out + "]";
}

// Ok when `name` exists with exactly `shape` (torch order).
Status expect(const TensorIndex& index, const std::string& name,
              const std::vector<int64_t>& shape) {
    const TensorInfo* t = index.find(name);
    if (!t) return Status::Error("missing tensor " + name);
    if (t->shape != shape) {
        return Status::Error("tensor " + name + " has shape " + shape_text(t->shape) +
                             ", expected " + shape_text(shape));
    }
    return Status::Ok();
}

// The tower's prefix ("....visual."): the part before "patch_embed.proj." of the first
// tensor under `prefix` that has it; empty when there is none.
std::string tower_prefix(const TensorIndex& index, const std::string& prefix) {
    for (const TensorInfo& t : index.tensors()) {
        if (!starts_with(t.name, prefix)) continue;
        const size_t pos = t.name.find(kPatchEmbed);
        if (pos == std::string::npos) continue;
        const std::string base = t.name.substr(0, pos);
        if (ends_with(base, "visual.")) return base;
    }
    return "";
}

// RoPE on the two halves of every head (rotate-half, the reference's non-interleaved
// layout): x [heads*d, T], cos and sin [d/2, 1, T].
ggml_tensor* rope_halves(ggml_context* ctx, ggml_tensor* x, ggml_tensor* cos, ggml_tensor* sin,
                         int64_t heads) {
    const int64_t dim = x->ne[0], t = x->ne[1], d = dim / heads;
    if (!ggml_is_contiguous(x)) x = ggml_cont(ctx, x);
    ggml_tensor* x3 = ggml_reshape_3d(ctx, x, d, heads, t);
    const size_t es = ggml_element_size(x3);
    ggml_tensor* x0 = ggml_view_3d(ctx, x3, d / 2, heads, t, x3->nb[1], x3->nb[2], 0);
    ggml_tensor* x1 = ggml_view_3d(ctx, x3, d / 2, heads, t, x3->nb[1], x3->nb[2], d / 2 * es);
    ggml_tensor* r0 = ggml_sub(ctx, ggml_mul(ctx, x0, cos), ggml_mul(ctx, x1, sin));
    ggml_tensor* r1 = ggml_add(ctx, ggml_mul(ctx, x0, sin), ggml_mul(ctx, x1, cos));
    return ggml_reshape_2d(ctx, ggml_concat(ctx, r0, r1, 0), dim, t);
}

// Attention inside each window: every run of equal windows is one batched attention.
ggml_tensor* window_attention(ggml_context* ctx, ggml_tensor* q, ggml_tensor* k, ggml_tensor* v,
                              int heads, const std::vector<QwenVisionWindows>& runs) {
    ggml_tensor* out = nullptr;
    for (const QwenVisionWindows& r : runs) {
        auto part = [&](ggml_tensor* x) {
            return ggml_view_3d(ctx, x, x->ne[0], r.patches, r.count, x->nb[1],
                                r.patches * x->nb[1], r.first * x->nb[1]);
        };
        ggml_tensor* a = nn::attention(ctx, part(q), part(k), part(v), heads);
        a = ggml_reshape_2d(ctx, a, a->ne[0], r.patches * r.count);
        out = out ? ggml_concat(ctx, out, a, 1) : a;
    }
    return out;
}

}  // namespace

bool QwenVisionConfig::full_attention(int block) const {
    return std::find(full_attention_blocks.begin(), full_attention_blocks.end(), block) !=
           full_attention_blocks.end();
}

bool has_qwen_vision(const TensorIndex& index, const std::string& prefix) {
    return !tower_prefix(index, prefix).empty();
}

Result<QwenVisionConfig> detect_qwen_vision(const TensorIndex& index, const std::string& prefix) {
    QwenVisionConfig cfg;
    cfg.prefix = tower_prefix(index, prefix);
    const std::string& b = cfg.prefix;
    if (b.empty()) {
        return Status::Error("missing tensor " + prefix +
                             (ends_with(prefix, "visual.") ? "" : "visual.") + kPatchEmbed +
                             "weight");
    }
    const int64_t p = cfg.patch, tp = cfg.temporal_patch;
    const std::string conv3d = b + kPatchEmbed + "weight";
    if (const TensorInfo* pe = index.find(conv3d)) {
        cfg.width = pe->shape.empty() ? 0 : pe->shape[0];
        GGDIFF_TRY(expect(index, conv3d, {cfg.width, 3, tp, p, p}));
    } else if (const TensorInfo* p0 = index.find(b + kPatchEmbed + "0.weight")) {
        cfg.split_patch_embed = true;
        cfg.width = p0->shape.empty() ? 0 : p0->shape[0];
        for (int t = 0; t < tp; ++t) {
            GGDIFF_TRY(expect(index, b + kPatchEmbed + std::to_string(t) + ".weight",
                              {cfg.width, 3, p, p}));
        }
    } else {
        return Status::Error("missing tensor " + conv3d);
    }
    // 2-D RoPE: half of each head turns with the row, half with the column.
    if (cfg.width <= 0 || cfg.width % cfg.heads || cfg.head_dim() % 4) {
        return Status::Error(
            string_format("%s: vision width %lld is not %lld heads of a multiple of 4",
                          conv3d.c_str(), (long long)cfg.width, (long long)cfg.heads));
    }
    for (const TensorInfo& t : index.tensors()) {
        int n = 0;
        std::string rest;
        if (take_indexed(t.name, b + "blocks.", &n, &rest)) {
            cfg.layers = std::max<int64_t>(cfg.layers, n + 1);
        }
    }
    const std::string gate = b + "blocks.0.mlp.gate_proj.weight";
    const TensorInfo* g = index.find(gate);
    if (!g) return Status::Error("missing tensor " + gate);
    cfg.mlp = g->shape.empty() ? 0 : g->shape[0];
    const std::string out = b + "merger.mlp.2.weight";
    const TensorInfo* o = index.find(out);
    if (!o) return Status::Error("missing tensor " + out);
    cfg.out_dim = o->shape.empty() ? 0 : o->shape[0];
    cfg.split_qkv = index.has(b + "blocks.0.attn.q_proj.weight");

    const int64_t w = cfg.width, m = cfg.mlp, wide = w * cfg.merge * cfg.merge;
    for (int64_t i = 0; i < cfg.layers; ++i) {
        const std::string l = b + "blocks." + std::to_string(i) + ".";
        GGDIFF_TRY(expect(index, l + "norm1.weight", {w}));
        if (cfg.split_qkv) {
            for (const char* n : {"q_proj", "k_proj", "v_proj"}) {
                GGDIFF_TRY(expect(index, l + "attn." + n + ".weight", {w, w}));
                GGDIFF_TRY(expect(index, l + "attn." + n + ".bias", {w}));
            }
        } else {
            GGDIFF_TRY(expect(index, l + "attn.qkv.weight", {3 * w, w}));
            GGDIFF_TRY(expect(index, l + "attn.qkv.bias", {3 * w}));
        }
        GGDIFF_TRY(expect(index, l + "attn.proj.weight", {w, w}));
        GGDIFF_TRY(expect(index, l + "attn.proj.bias", {w}));
        GGDIFF_TRY(expect(index, l + "norm2.weight", {w}));
        for (const char* n : {"gate_proj", "up_proj"}) {
            GGDIFF_TRY(expect(index, l + "mlp." + n + ".weight", {m, w}));
            GGDIFF_TRY(expect(index, l + "mlp." + n + ".bias", {m}));
        }
        GGDIFF_TRY(expect(index, l + "mlp.down_proj.weight", {w, m}));
        GGDIFF_TRY(expect(index, l + "mlp.down_proj.bias", {w}));
    }
    GGDIFF_TRY(expect(index, b + "merger.ln_q.weight", {w}));
    GGDIFF_TRY(expect(index, b + "merger.mlp.0.weight", {wide, wide}));
    GGDIFF_TRY(expect(index, b + "merger.mlp.0.bias", {wide}));
    GGDIFF_TRY(expect(index, out, {cfg.out_dim, wide}));
    GGDIFF_TRY(expect(index, b + "merger.mlp.2.bias", {cfg.out_dim}));
    return cfg;
}

std::pair<int, int> qwen_vision_size(int width, int height, const QwenVisionConfig& cfg) {
    // The reference's arithmetic, in its types (std::round rounds halves away from zero).
    const double factor = cfg.patch * cfg.merge;
    const int f = static_cast<int>(factor);
    const double min_pixels = 384.0 * 384.0, max_pixels = 560.0 * 560.0;
    const double area = static_cast<double>(height) * width;
    int h_bar = static_cast<int>(std::round(height / factor) * factor);
    int w_bar = static_cast<int>(std::round(width / factor) * factor);
    if (static_cast<double>(h_bar) * w_bar > max_pixels) {
        const double beta = std::sqrt(area / max_pixels);
        h_bar = std::max(f, static_cast<int>(std::floor(height / beta / factor)) * f);
        w_bar = std::max(f, static_cast<int>(std::floor(width / beta / factor)) * f);
    } else if (static_cast<double>(h_bar) * w_bar < min_pixels) {
        const double beta = std::sqrt(min_pixels / area);
        h_bar = static_cast<int>(std::ceil(height * beta / factor)) * f;
        w_bar = static_cast<int>(std::ceil(width * beta / factor)) * f;
    }
    return {w_bar, h_bar};
}

HostTensor qwen_vision_patches(const HostTensor& pixels, int64_t patch, int64_t temporal,
                               int64_t merge) {
    const int64_t p = patch, mg = merge, tp = temporal;
    const int64_t W = pixels.dim(0), H = pixels.dim(1);
    const int64_t lw = W / p / mg, units = lw * (H / p / mg), per = mg * mg;
    HostTensor patches({3 * tp * p * p, units * per});
    float* dst = patches.ptr();
    for (int64_t u = 0; u < units; ++u) {
        for (int64_t s = 0; s < per; ++s) {
            const int64_t py = (u / lw) * mg + s / mg, px = (u % lw) * mg + s % mg;
            for (int64_t ch = 0; ch < 3; ++ch) {
                for (int64_t t = 0; t < tp; ++t) {
                    for (int64_t ky = 0; ky < p; ++ky) {
                        const float* row = pixels.ptr() + (ch * H + py * p + ky) * W + px * p;
                        dst = std::copy(row, row + p, dst);
                    }
                }
            }
        }
    }
    return patches;
}

Result<QwenVisionInputs> qwen_vision_inputs(const QwenVisionConfig& cfg, const HostTensor& pixels) {
    const int64_t p = cfg.patch, mg = cfg.merge, tp = cfg.temporal_patch;
    const int64_t W = pixels.dim(0), H = pixels.dim(1);
    if (pixels.dim(2) != 3 || pixels.dim(3) != 1 || W <= 0 || H <= 0 || W % (p * mg) ||
        H % (p * mg)) {
        return Status::Error(string_format(
            "vision input: expected a [W, H, 3] image with sides multiples of %lld, got "
            "[%lld, %lld, %lld, %lld]",
            (long long)(p * mg), (long long)W, (long long)H, (long long)pixels.dim(2),
            (long long)pixels.dim(3)));
    }
    QwenVisionInputs in;
    in.grid_w = W / p;
    in.grid_h = H / p;
    const int64_t lw = in.grid_w / mg, lh = in.grid_h / mg, per = mg * mg;
    const int64_t units = lw * lh;
    in.patches = qwen_vision_patches(pixels, p, tp, mg);

    // Windows of `ws` x `ws` merge units from the top left; the edge ones are cut. Kind:
    // 0 full, 1 cut on the right, 2 cut at the bottom, 3 both.
    const int64_t ws = std::max<int64_t>(1, cfg.window / p / mg);
    struct Window {
        int64_t y, x, h, w;
        int kind;
    };
    std::vector<Window> windows;
    for (int64_t y = 0; y < lh; y += ws) {
        for (int64_t x = 0; x < lw; x += ws) {
            const int64_t h = std::min(ws, lh - y), w = std::min(ws, lw - x);
            windows.push_back({y, x, h, w, (h < ws ? 2 : 0) + (w < ws ? 1 : 0)});
        }
    }
    std::stable_sort(windows.begin(), windows.end(),
                     [](const Window& a, const Window& b) { return a.kind < b.kind; });
    in.window_index.resize(static_cast<size_t>(units));
    in.inverse_index.resize(static_cast<size_t>(units));
    int64_t pos = 0;
    for (const Window& win : windows) {
        if (in.windows.empty() || in.windows.back().patches != win.h * win.w * per) {
            in.windows.push_back({pos * per, 0, win.h * win.w * per});
        }
        ++in.windows.back().count;
        for (int64_t y = 0; y < win.h; ++y) {
            for (int64_t x = 0; x < win.w; ++x) {
                const int64_t u = (win.y + y) * lw + win.x + x;
                in.window_index[static_cast<size_t>(pos)] = static_cast<int32_t>(u);
                in.inverse_index[static_cast<size_t>(u)] = static_cast<int32_t>(pos);
                ++pos;
            }
        }
    }

    // RoPE angles of the tokens in window order: (row, column) of each patch, half of each
    // head's pairs per axis.
    std::vector<float> ids;
    ids.reserve(static_cast<size_t>(2 * in.tokens()));
    for (int64_t i = 0; i < units; ++i) {
        const int64_t u = in.window_index[static_cast<size_t>(i)];
        for (int64_t s = 0; s < per; ++s) {
            ids.push_back(static_cast<float>((u / lw) * mg + s / mg));
            ids.push_back(static_cast<float>((u % lw) * mg + s % mg));
        }
    }
    const int half = static_cast<int>(cfg.head_dim() / 2);
    const nn::RopeTable tab = nn::rope_table(ids, {half, half}, cfg.rope_theta);
    in.cos = HostTensor({tab.pairs, 1, in.tokens()});
    in.sin = HostTensor({tab.pairs, 1, in.tokens()});
    in.cos.data = tab.cos;
    in.sin.data = tab.sin;
    return in;
}

ggml_tensor* build_qwen_vision(nn::Ctx& c, const QwenVisionConfig& cfg, const QwenVisionInputs& in,
                               ggml_tensor* patches, ggml_tensor* window_index,
                               ggml_tensor* inverse_index, ggml_tensor* cos, ggml_tensor* sin) {
    ggml_context* ctx = c.ctx;
    const std::string& b = cfg.prefix;
    const int64_t w = cfg.width, p = cfg.patch, tp = cfg.temporal_patch;
    const int64_t per = cfg.merge * cfg.merge, t = in.tokens(), units = t / per;
    const int heads = static_cast<int>(cfg.heads);

    // Patch embedding: a kernel as large as its stride is one product per patch.
    ggml_tensor* x = nullptr;
    if (!cfg.split_patch_embed) {
        ggml_tensor* k = c.W(b + kPatchEmbed + "weight", {p, p, tp, 3 * w});
        x = ggml_mul_mat(ctx, ggml_reshape_2d(ctx, k, 3 * tp * p * p, w), patches);
    } else {
        // One Conv2d per time step, on that step's features of every channel.
        const size_t es = ggml_element_size(patches);
        for (int64_t s = 0; s < tp; ++s) {
            ggml_tensor* k = c.W(b + kPatchEmbed + std::to_string(s) + ".weight", {p, p, 3, w});
            ggml_tensor* xs = ggml_view_3d(ctx, patches, p * p, 3, t, tp * p * p * es,
                                           patches->nb[1], s * p * p * es);
            xs = ggml_reshape_2d(ctx, ggml_cont(ctx, xs), 3 * p * p, t);
            ggml_tensor* y = ggml_mul_mat(ctx, ggml_reshape_2d(ctx, k, 3 * p * p, w), xs);
            x = x ? ggml_add(ctx, x, y) : y;
        }
    }

    // Window order, whole merge units at a time.
    x = ggml_get_rows(ctx, ggml_reshape_2d(ctx, x, w * per, units), window_index);
    x = ggml_reshape_2d(ctx, x, w, t);

    for (int64_t i = 0; i < cfg.layers; ++i) {
        const std::string l = b + "blocks." + std::to_string(i) + ".";
        ggml_tensor* h = nn::rms_norm(c, x, l + "norm1.weight", w, cfg.eps);
        ggml_tensor *q, *k, *v;
        if (cfg.split_qkv) {
            q = nn::linear(c, h, l + "attn.q_proj", w, w);
            k = nn::linear(c, h, l + "attn.k_proj", w, w);
            v = nn::linear(c, h, l + "attn.v_proj", w, w);
        } else {
            ggml_tensor* qkv = nn::linear(c, h, l + "attn.qkv", w, 3 * w);
            q = nn::feature_rows(ctx, qkv, 0, w);
            k = nn::feature_rows(ctx, qkv, w, w);
            v = ggml_cont(ctx, nn::feature_rows(ctx, qkv, 2 * w, w));
        }
        q = rope_halves(ctx, q, cos, sin, cfg.heads);
        k = rope_halves(ctx, k, cos, sin, cfg.heads);
        ggml_tensor* a = cfg.full_attention(static_cast<int>(i))
                             ? nn::attention(ctx, q, k, v, heads)
                             : window_attention(ctx, q, k, v, heads, in.windows);
        x = ggml_add(ctx, x, nn::linear(c, a, l + "attn.proj", w, w));

        h = nn::rms_norm(c, x, l + "norm2.weight", w, cfg.eps);
        ggml_tensor* g = ggml_silu(ctx, nn::linear(c, h, l + "mlp.gate_proj", w, cfg.mlp));
        ggml_tensor* u = nn::linear(c, h, l + "mlp.up_proj", w, cfg.mlp);
        x = ggml_add(ctx, x, nn::linear(c, ggml_mul(ctx, g, u), l + "mlp.down_proj", cfg.mlp, w));
    }

    // Merger: 2x2 patches side by side, tanh GELU between the two linears (ggml_gelu, as
    // the reference), then back to raster order.
    ggml_tensor* h = nn::rms_norm(c, x, b + "merger.ln_q.weight", w, cfg.eps);
    h = ggml_reshape_2d(ctx, h, w * per, units);
    h = ggml_gelu(ctx, nn::linear(c, h, b + "merger.mlp.0", w * per, w * per));
    h = nn::linear(c, h, b + "merger.mlp.2", w * per, cfg.out_dim);
    return ggml_get_rows(ctx, h, inverse_index);
}

}  // namespace ggdiff::models
