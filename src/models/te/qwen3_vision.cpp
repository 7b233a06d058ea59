#include "models/te/qwen3_vision.h"

#include <ggml.h>

#include <algorithm>
#include <cmath>

#include "core/log.h"
#include "io/name_util.h"
#include "io/tensor_probe.h"
#include "models/te/qwen_vision.h"
#include "nn/dit.h"
#include "nn/layers.h"

namespace ggdiff::models {

namespace {

constexpr const char* kPosEmbed = "pos_embed.weight";

// The tower's prefix ("....visual."): the part before "pos_embed.weight" of the first tensor
// under `prefix` that ends with it; empty when there is none.
std::string tower_prefix(const TensorIndex& index, const std::string& prefix) {
    for (const TensorInfo& t : index.tensors()) {
        if (!starts_with(t.name, prefix) || !ends_with(t.name, kPosEmbed)) continue;
        const std::string base = t.name.substr(0, t.name.size() - std::string(kPosEmbed).size());
        if (ends_with(base, "visual.")) return base;
    }
    return "";
}

}  // namespace

bool has_qwen3_vision(const TensorIndex& index, const std::string& prefix) {
    return !tower_prefix(index, prefix).empty();
}

Result<Qwen3VisionConfig> detect_qwen3_vision(const TensorIndex& index, const std::string& prefix) {
    Qwen3VisionConfig cfg;
    cfg.prefix = tower_prefix(index, prefix);
    if (cfg.prefix.empty()) {
        return Status::Error("missing tensor " + prefix +
                             (ends_with(prefix, "visual.") ? "" : "visual.") + kPosEmbed);
    }
    const TensorProbe probe{index, cfg.prefix, "Qwen3-VL vision tower"};
    auto pos = probe.shape(kPosEmbed, 2);
    if (!pos.ok()) return pos.status();
    cfg.width = (*pos)[1];
    cfg.grid_side = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>((*pos)[0]))));
    if (cfg.grid_side < 1 || cfg.grid_side * cfg.grid_side != (*pos)[0]) {
        return probe.odd(kPosEmbed, "its rows are not a square grid of positions");
    }
    // 2-D RoPE: half of each head turns with the row, half with the column.
    if (cfg.width % cfg.heads || cfg.head_dim() % 4) {
        return probe.odd(kPosEmbed, string_format("width %lld is not %lld heads of a multiple of 4",
                                                  (long long)cfg.width, (long long)cfg.heads));
    }
    const int64_t w = cfg.width, tp = cfg.temporal_patch;
    if (const TensorInfo* t = index.find(cfg.prefix + "patch_embed.proj.weight")) {
        // [width, 3, 2, p, p]; GGUF files hold it as [width * 3, 2, p, p] (ggml's 4 dimensions).
        const bool gguf = t->shape.size() == 4;
        auto pe = probe.shape("patch_embed.proj.weight", gguf ? 4 : 5);
        if (!pe.ok()) return pe.status();
        cfg.patch = static_cast<int>(pe->back());
        const int64_t p = cfg.patch;
        GGDIFF_TRY(
            probe.expect("patch_embed.proj.weight", gguf ? std::vector<int64_t>{w * 3, tp, p, p}
                                                         : std::vector<int64_t>{w, 3, tp, p, p}));
        GGDIFF_TRY(probe.expect("patch_embed.proj.bias", {w}));
    } else {
        cfg.split_patch_embed = true;
        auto pe = probe.shape("patch_embed.proj.0.weight", 4);
        if (!pe.ok()) return pe.status();
        cfg.patch = static_cast<int>((*pe)[3]);
        const int64_t p = cfg.patch;
        for (int t = 0; t < tp; ++t) {
            GGDIFF_TRY(
                probe.expect("patch_embed.proj." + std::to_string(t) + ".weight", {w, 3, p, p}));
        }
        GGDIFF_TRY(probe.expect("patch_embed.bias", {w}));
    }
    for (const TensorInfo& t : index.tensors()) {
        int n = 0;
        std::string rest;
        if (take_indexed(t.name, cfg.prefix + "blocks.", &n, &rest)) {
            cfg.layers = std::max<int64_t>(cfg.layers, n + 1);
        }
    }
    auto fc1 = probe.shape("blocks.0.mlp.linear_fc1.weight", 2);
    if (!fc1.ok()) return fc1.status();
    cfg.mlp = (*fc1)[0];
    auto out = probe.shape("merger.linear_fc2.weight", 2);
    if (!out.ok()) return out.status();
    cfg.out_dim = (*out)[0];

    const int64_t m = cfg.mlp, wide = w * cfg.merge * cfg.merge;
    auto linear = [&](const std::string& n, int64_t in, int64_t outs) {
        Status s = probe.expect(n + ".weight", {outs, in});
        return s.ok() ? probe.expect(n + ".bias", {outs}) : s;
    };
    for (int64_t i = 0; i < cfg.layers; ++i) {
        const std::string l = "blocks." + std::to_string(i) + ".";
        for (const char* n : {"norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias"}) {
            GGDIFF_TRY(probe.expect(l + n, {w}));
        }
        GGDIFF_TRY(linear(l + "attn.qkv", w, 3 * w));
        GGDIFF_TRY(linear(l + "attn.proj", w, w));
        GGDIFF_TRY(linear(l + "mlp.linear_fc1", w, m));
        GGDIFF_TRY(linear(l + "mlp.linear_fc2", m, w));
    }
    GGDIFF_TRY(probe.expect("merger.norm.weight", {w}));
    GGDIFF_TRY(probe.expect("merger.norm.bias", {w}));
    GGDIFF_TRY(linear("merger.linear_fc1", wide, wide));
    GGDIFF_TRY(linear("merger.linear_fc2", wide, cfg.out_dim));
    return cfg;
}

Result<Qwen3VisionInputs> qwen3_vision_inputs(const Qwen3VisionConfig& cfg,
                                              const HostTensor& pixels) {
    const int64_t p = cfg.patch, mg = cfg.merge, f = cfg.factor();
    const int64_t W = pixels.dim(0), H = pixels.dim(1);
    if (pixels.dim(2) != 3 || pixels.dim(3) != 1 || W <= 0 || H <= 0 || W % f || H % f) {
        return Status::Error(string_format(
            "vision input: expected a [W, H, 3] image with sides multiples of %lld, got "
            "[%lld, %lld, %lld, %lld]",
            (long long)f, (long long)W, (long long)H, (long long)pixels.dim(2),
            (long long)pixels.dim(3)));
    }
    Qwen3VisionInputs in;
    in.grid_w = W / p;
    in.grid_h = H / p;
    in.patches = qwen_vision_patches(pixels, p, cfg.temporal_patch, mg);

    // Each token's (row, column) in the patches' order, its place on the position table (the
    // grid stretched over the table's corners, as the reference computes it in doubles) and
    // its RoPE angles.
    const int64_t n = cfg.grid_side, t = in.tokens();
    const double last = static_cast<double>(n - 1);
    std::array<std::vector<float>, 4> weights;
    std::vector<float> ids;
    ids.reserve(static_cast<size_t>(2 * t));
    for (int64_t u = 0; u < in.outputs(); ++u) {
        for (int64_t s = 0; s < mg * mg; ++s) {
            const int64_t row = (u / (in.grid_w / mg)) * mg + s / mg;
            const int64_t col = (u % (in.grid_w / mg)) * mg + s % mg;
            ids.push_back(static_cast<float>(row));
            ids.push_back(static_cast<float>(col));
            const double hp =
                in.grid_h == 1 ? 0.0 : last * row / static_cast<double>(in.grid_h - 1);
            const double wp =
                in.grid_w == 1 ? 0.0 : last * col / static_cast<double>(in.grid_w - 1);
            const int64_t h0 = static_cast<int64_t>(std::floor(hp)),
                          w0 = static_cast<int64_t>(std::floor(wp));
            const int64_t h1 = std::min(h0 + 1, n - 1), w1 = std::min(w0 + 1, n - 1);
            const double dh = hp - h0, dw = wp - w0;
            const int64_t rows[4] = {h0 * n + w0, h0 * n + w1, h1 * n + w0, h1 * n + w1};
            const double wts[4] = {(1 - dh) * (1 - dw), (1 - dh) * dw, dh * (1 - dw), dh * dw};
            for (int k = 0; k < 4; ++k) {
                in.pos_rows[k].push_back(static_cast<int32_t>(rows[k]));
                weights[k].push_back(static_cast<float>(wts[k]));
            }
        }
    }
    for (int k = 0; k < 4; ++k) {
        in.pos_weights[k] = HostTensor({1, t});
        in.pos_weights[k].data = std::move(weights[k]);
    }
    const int half = static_cast<int>(cfg.head_dim() / 2);
    const nn::RopeTable tab = nn::rope_table(ids, {half, half}, cfg.rope_theta);
    in.cos = HostTensor({tab.pairs, 1, t});
    in.sin = HostTensor({tab.pairs, 1, t});
    in.cos.data = tab.cos;
    in.sin.data = tab.sin;
    return in;
}

ggml_tensor* build_qwen3_vision(nn::Ctx& c, const Qwen3VisionConfig& cfg, ggml_tensor* patches,
                                const std::array<ggml_tensor*, 4>& pos_rows,
                                const std::array<ggml_tensor*, 4>& pos_weights, ggml_tensor* cos,
                                ggml_tensor* sin) {
    ggml_context* ctx = c.ctx;
    const std::string& b = cfg.prefix;
    const int64_t w = cfg.width, p = cfg.patch, tp = cfg.temporal_patch;
    const int64_t per = cfg.merge * cfg.merge, t = patches->ne[1];
    const int heads = static_cast<int>(cfg.heads);

    // Patch embedding: a kernel as large as its stride is one product per patch.
    ggml_tensor* x = nullptr;
    if (!cfg.split_patch_embed) {
        ggml_tensor* k = c.W(b + "patch_embed.proj.weight", {p, p, tp, 3 * w});
        x = ggml_mul_mat(ctx, ggml_reshape_2d(ctx, k, 3 * tp * p * p, w), patches);
        x = ggml_add(ctx, x, c.W(b + "patch_embed.proj.bias", {w}));
    } else {
        // One Conv2d per time step, on that step's features of every channel, then the bias.
        const size_t es = ggml_element_size(patches);
        for (int64_t s = 0; s < tp; ++s) {
            ggml_tensor* k =
                c.W(b + "patch_embed.proj." + std::to_string(s) + ".weight", {p, p, 3, w});
            ggml_tensor* xs = ggml_view_3d(ctx, patches, p * p, 3, t, tp * p * p * es,
                                           patches->nb[1], s * p * p * es);
            xs = ggml_reshape_2d(ctx, ggml_cont(ctx, xs), 3 * p * p, t);
            ggml_tensor* y = ggml_mul_mat(ctx, ggml_reshape_2d(ctx, k, 3 * p * p, w), xs);
            x = x ? ggml_add(ctx, x, y) : y;
        }
        x = ggml_add(ctx, x, c.W(b + "patch_embed.bias", {w}));
    }

    // The position table's four neighbours of each token, weighted.
    ggml_tensor* table = c.W(b + kPosEmbed, {w, cfg.grid_side * cfg.grid_side});
    ggml_tensor* pos = nullptr;
    for (int k = 0; k < 4; ++k) {
        ggml_tensor* e = ggml_mul(ctx, ggml_get_rows(ctx, table, pos_rows[k]), pos_weights[k]);
        pos = pos ? ggml_add(ctx, pos, e) : e;
    }
    x = ggml_add(ctx, x, pos);

    for (int64_t i = 0; i < cfg.layers; ++i) {
        const std::string l = b + "blocks." + std::to_string(i) + ".";
        ggml_tensor* h = nn::layer_norm(c, x, l + "norm1", w, cfg.eps);
        ggml_tensor* qkv = nn::linear(c, h, l + "attn.qkv", w, 3 * w);
        ggml_tensor* q = nn::rope_halves(ctx, nn::feature_rows(ctx, qkv, 0, w), cos, sin, heads);
        ggml_tensor* k = nn::rope_halves(ctx, nn::feature_rows(ctx, qkv, w, w), cos, sin, heads);
        ggml_tensor* v = ggml_cont(ctx, nn::feature_rows(ctx, qkv, 2 * w, w));
        ggml_tensor* a = nn::attention(ctx, q, k, v, heads);
        x = ggml_add(ctx, x, nn::linear(c, a, l + "attn.proj", w, w));

        h = nn::layer_norm(c, x, l + "norm2", w, cfg.eps);
        h = ggml_gelu(ctx, nn::linear(c, h, l + "mlp.linear_fc1", w, cfg.mlp));
        x = ggml_add(ctx, x, nn::linear(c, h, l + "mlp.linear_fc2", cfg.mlp, w));
    }

    // Merger: 2x2 patches side by side, erf GELU between the two linears.
    ggml_tensor* h = nn::layer_norm(c, x, b + "merger.norm", w, cfg.eps);
    h = ggml_reshape_2d(ctx, h, w * per, t / per);
    h = ggml_gelu_erf(ctx, nn::linear(c, h, b + "merger.linear_fc1", w * per, w * per));
    return nn::linear(c, h, b + "merger.linear_fc2", w * per, cfg.out_dim);
}

}  // namespace ggdiff::models
