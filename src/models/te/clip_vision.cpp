#include "models/te/clip_vision.h"

#include <ggml.h>

#include <algorithm>
#include <cmath>

#include "io/name_util.h"
#include "io/tensor_probe.h"
#include "models/te/clip_text.h"
#include "nn/layers.h"

namespace ggdiff::models {

namespace {

constexpr const char* kTower = "vision_model.";
constexpr const char* kPatchEmbed = "embeddings.patch_embedding.weight";

// The tower's own prefix for a role or tower prefix.
std::string tower_prefix(const std::string& prefix) {
    return ends_with(prefix, kTower) ? prefix : prefix + kTower;
}

// f32 view of a weight that may be stored in another type.
ggml_tensor* as_f32(ggml_context* ctx, ggml_tensor* t) {
    return t->type == GGML_TYPE_F32 ? t : ggml_cast(ctx, t, GGML_TYPE_F32);
}

}  // namespace

std::vector<std::string> ClipVisionConfig::layer_prefixes() const {
    std::vector<std::string> out;
    for (int64_t i = 0; i < layers; ++i) {
        out.push_back(prefix + "encoder.layers." + std::to_string(i) + ".");
    }
    return out;
}

bool has_clip_vision(const TensorIndex& index, const std::string& prefix) {
    return index.has(tower_prefix(prefix) + kPatchEmbed);
}

Result<ClipVisionConfig> detect_clip_vision(const TensorIndex& index, const std::string& prefix) {
    ClipVisionConfig cfg;
    cfg.prefix = tower_prefix(prefix);
    const TensorProbe probe{index, cfg.prefix, "CLIP vision"};

    auto ps = probe.shape(kPatchEmbed, 4);
    if (!ps.ok()) return ps.status();
    const std::vector<int64_t>& pv = *ps;
    if (pv[1] != 3 || pv[2] != pv[3] || pv[0] < 1 || pv[2] < 1) {
        return probe.odd(kPatchEmbed, "expected [width, 3, patch, patch]");
    }
    cfg.width = pv[0];
    cfg.patch = pv[2];
    const int64_t w = cfg.width;
    if (w > 1024 ? w % 16 != 0 : w % 64 != 0) {
        return probe.odd(kPatchEmbed, "width " + std::to_string(w) +
                                          " is not a CLIP vision width (a multiple of 64 up to "
                                          "1024, of 16 above)");
    }
    cfg.heads = w > 1024 ? 16 : w / 64;
    cfg.quick_gelu = !(w == 1024 || w == 1280);

    GGDIFF_TRY(probe.expect("embeddings.class_embedding", {w}));
    // A square grid of patches plus the class token.
    const std::string pos = "embeddings.position_embedding.weight";
    auto pt = probe.shape(pos, 2);
    if (!pt.ok()) return pt.status();
    const int64_t n = (*pt)[0];
    const auto grid = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(n - 1))));
    if ((*pt)[1] != w || n < 2 || grid * grid != n - 1) {
        return probe.odd(pos, "expected [1 + grid^2, " + std::to_string(w) + "]");
    }
    cfg.positions = n;
    cfg.image_size = grid * cfg.patch;
    GGDIFF_TRY(probe.expect("pre_layrnorm.weight", {w}));
    GGDIFF_TRY(probe.expect("pre_layrnorm.bias", {w}));

    int64_t layers = 0;
    while (probe.has("encoder.layers." + std::to_string(layers) + ".self_attn.q_proj.weight")) {
        ++layers;
    }
    if (layers == 0) return probe.missing("encoder.layers.0.self_attn.q_proj.weight");
    cfg.layers = layers;
    const std::string fc1 = "encoder.layers.0.mlp.fc1.weight";
    auto f = probe.shape(fc1, 2);
    if (!f.ok()) return f.status();
    if ((*f)[1] != w || (*f)[0] < 1) {
        return probe.odd(fc1, "expected [intermediate, " + std::to_string(w) + "]");
    }
    cfg.intermediate = (*f)[0];
    const int64_t m = cfg.intermediate;
    for (int64_t i = 0; i < layers; ++i) {
        const std::string l = "encoder.layers." + std::to_string(i) + ".";
        for (const char* norm : {"layer_norm1.", "layer_norm2."}) {
            GGDIFF_TRY(probe.expect(l + norm + "weight", {w}));
            GGDIFF_TRY(probe.expect(l + norm + "bias", {w}));
        }
        for (const char* proj : {"q_proj.", "k_proj.", "v_proj.", "out_proj."}) {
            GGDIFF_TRY(probe.expect(l + "self_attn." + proj + "weight", {w, w}));
            GGDIFF_TRY(probe.expect(l + "self_attn." + proj + "bias", {w}));
        }
        GGDIFF_TRY(probe.expect(l + "mlp.fc1.weight", {m, w}));
        GGDIFF_TRY(probe.expect(l + "mlp.fc1.bias", {m}));
        GGDIFF_TRY(probe.expect(l + "mlp.fc2.weight", {w, m}));
        GGDIFF_TRY(probe.expect(l + "mlp.fc2.bias", {w}));
    }
    return cfg;
}

ggml_tensor* build_clip_vision(nn::Ctx& c, const ClipVisionConfig& cfg, ggml_tensor* pixels,
                               int64_t layers_to_run) {
    const std::string& p = cfg.prefix;
    const int64_t w = cfg.width;
    // Patches [grid, grid, width, 1] -> tokens [width, grid^2, 1] in raster order.
    ggml_tensor* x = nn::conv2d(c, pixels, p + "embeddings.patch_embedding", 3, w,
                                static_cast<int>(cfg.patch), static_cast<int>(cfg.patch), 0,
                                /*bias=*/false);
    x = nn::image_to_tokens(c.ctx, x);
    ggml_tensor* cls = as_f32(c.ctx, c.W(p + "embeddings.class_embedding", {w}));
    x = ggml_concat(c.ctx, ggml_reshape_3d(c.ctx, cls, w, 1, 1), x, 1);
    ggml_tensor* pos =
        as_f32(c.ctx, c.W(p + "embeddings.position_embedding.weight", {w, cfg.positions}));
    x = ggml_add(c.ctx, x, pos);
    x = nn::layer_norm(c, x, p + "pre_layrnorm", w);

    const ClipLayerShape shape{w, cfg.heads, cfg.intermediate, cfg.quick_gelu, /*causal=*/false};
    const std::vector<std::string> layers = cfg.layer_prefixes();
    const int64_t run = std::clamp<int64_t>(layers_to_run, 1, cfg.layers);
    for (int64_t i = 0; i < run; ++i) {
        x = clip_encoder_layer(c, shape, x, layers[static_cast<size_t>(i)]);
    }
    return x;
}

}  // namespace ggdiff::models
