#include "families/chroma/dit.h"

#include "io/tensor_probe.h"
#include "nn/dit.h"
#include "nn/layers.h"
#include "runtime/kernel_choices.h"

namespace ggdiff::models {
namespace {

constexpr float kNormEps = 1e-6f;
// stable-diffusion.cpp's row layout, fixed at Chroma's 38 single and 19 double blocks.
constexpr int kSingleRows = 3 * 38;
constexpr int kDoubleRows = 6 * 19;
constexpr int kTimeFeatures = 16, kIndexFeatures = 32, kMaxPeriod = 10000;

// The approximator: features [approx_in, 344, M] -> modulation rows [hidden, 344, M].
ggml_tensor* approximator(nn::Ctx& c, const ChromaConfig& cfg, ggml_tensor* x) {
    const std::string p = cfg.flux.prefix + "distilled_guidance_layer.";
    const int64_t w = cfg.approx_width;
    x = nn::linear(c, x, p + "in_proj", cfg.approx_in, w);
    for (int i = 0; i < cfg.approx_layers; ++i) {
        const std::string n = std::to_string(i);
        ggml_tensor* h = nn::rms_norm(c, x, p + "norms." + n + ".scale", w, kNormEps);
        h = nn::linear(c, h, p + "layers." + n + ".in_layer", w, w);
        h = nn::linear(c, ggml_silu(c.ctx, h), p + "layers." + n + ".out_layer", w, w);
        x = ggml_add(c.ctx, x, h);
    }
    return nn::linear(c, x, p + "out_proj", w, cfg.flux.hidden);
}

// Sinusoidal features of value * 1000 (cosines first), [dim, count].
ggml_tensor* features(ggml_context* ctx, ggml_tensor* v, int dim) {
    return ggml_timestep_embedding(ctx, ggml_scale(ctx, v, 1000.0f), dim, kMaxPeriod);
}

}  // namespace

Result<ChromaConfig> detect_chroma(const TensorIndex& index, const std::string& prefix) {
    auto flux = detect_flux(index, prefix);
    if (!flux.ok()) return flux.status();
    const TensorProbe p{index, prefix, "Chroma"};
    if (!flux->approximator) return p.missing("distilled_guidance_layer.in_proj.weight");
    ChromaConfig cfg;
    cfg.flux = *flux;
    auto in = p.shape("distilled_guidance_layer.in_proj.weight", 2);
    if (!in.ok()) return in.status();
    cfg.approx_width = (*in)[0];
    cfg.approx_in = (*in)[1];
    if (cfg.approx_in != 2 * kTimeFeatures + kIndexFeatures) {
        return p.odd(
            "distilled_guidance_layer.in_proj.weight",
            "takes " + std::to_string(cfg.approx_in) + " features, Chroma's approximator takes 64");
    }
    cfg.approx_layers = 0;
    while (p.has("distilled_guidance_layer.layers." + std::to_string(cfg.approx_layers) +
                 ".in_layer.weight")) {
        ++cfg.approx_layers;
    }
    auto out = p.shape("distilled_guidance_layer.out_proj.weight", 2);
    if (!out.ok()) return out.status();
    if ((*out)[0] != cfg.flux.hidden || (*out)[1] != cfg.approx_width) {
        return p.odd("distilled_guidance_layer.out_proj.weight",
                     "does not map the approximator's width to the hidden width");
    }
    if (cfg.flux.pixel_patch_in) {
        auto rad = detect_radiance(index, prefix);
        if (!rad.ok()) return rad.status();
        cfg.radiance = true;
        cfg.rad = *rad;
        cfg.flux.patch = rad->patch;
        cfg.flux.in_channels = cfg.flux.out_channels = rad->channels * rad->patch * rad->patch;
    } else {
        auto fin = p.shape("final_layer.linear.weight", 2);
        if (!fin.ok()) return fin.status();
    }
    return cfg;
}

std::vector<float> chroma_mod_index() {
    std::vector<float> v(kChromaModRows);
    for (int i = 0; i < kChromaModRows; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i);
    return v;
}

ggml_tensor* build_chroma(nn::Ctx& c, const ChromaConfig& cfg, ggml_tensor* x,
                          ggml_tensor* timesteps, ggml_tensor* mod_index, ggml_tensor* context,
                          ggml_tensor* key_mask, ggml_tensor* pe_cos, ggml_tensor* pe_sin,
                          const std::vector<int>* skip, ggml_tensor* dct) {
    const FluxConfig& f = cfg.flux;
    const int64_t W = x->ne[0], H = x->ne[1], N = x->ne[3];
    const int ps = f.patch;
    const int64_t w = (W + ps - 1) / ps, h = (H + ps - 1) / ps;
    const int64_t m = timesteps->ne[0];

    // Row i's features: (timestep, guidance 0, index i), each sinusoidal.
    ggml_tensor* t = features(c.ctx, timesteps, kTimeFeatures);  // [16, M]
    ggml_tensor* g = features(c.ctx, ggml_scale(c.ctx, timesteps, 0.0f), kTimeFeatures);
    ggml_tensor* tg = ggml_reshape_3d(c.ctx, ggml_concat(c.ctx, t, g, 0), 2 * kTimeFeatures, 1, m);
    ggml_tensor* idx = features(c.ctx, mod_index, kIndexFeatures);  // [32, 344]
    tg = ggml_repeat(
        c.ctx, tg, ggml_new_tensor_3d(c.ctx, GGML_TYPE_F32, 2 * kTimeFeatures, kChromaModRows, m));
    idx = ggml_repeat(c.ctx, ggml_reshape_3d(c.ctx, idx, kIndexFeatures, kChromaModRows, 1),
                      ggml_new_tensor_3d(c.ctx, GGML_TYPE_F32, kIndexFeatures, kChromaModRows, m));
    ggml_tensor* rows = approximator(c, cfg, ggml_concat(c.ctx, tg, idx, 0));  // [hidden, 344, M]
    auto row = [&](int r) {
        return ggml_view_3d(c.ctx, rows, f.hidden, 1, m, rows->nb[1], rows->nb[2],
                            static_cast<size_t>(r) * rows->nb[1]);
    };
    auto rows_from = [&](int first, int count) {
        FluxMods out;
        for (int k = 0; k < count; ++k) out.push_back(row(first + k));
        return out;
    };
    const FluxModSource mods = [&](FluxModSite site, int i) {
        switch (site) {
            case FluxModSite::DoubleImg:
                return rows_from(kSingleRows + 6 * i, 6);
            case FluxModSite::DoubleTxt:
                return rows_from(kSingleRows + kDoubleRows + 6 * i, 6);
            case FluxModSite::Single:
                break;
        }
        return rows_from(3 * i, 3);
    };

    ggml_tensor* txt = flux_text_tokens(c, f, context, N);
    if (cfg.radiance) {
        // Pixels patched by img_in_patch, decoded by the NeRF head from the raw block outputs.
        const KernelChoices k = kernel_choices(c.ctx);
        ggml_tensor* pixels = nn::pad_to_patch(c.ctx, x, ps, k.circular_x, k.circular_y);
        ggml_tensor* img = radiance_patch_in(c, cfg.rad, f.prefix, f.hidden, pixels);
        img = flux_blocks(c, f, img, txt, mods, pe_cos, pe_sin, key_mask, skip);
        ggml_tensor* out = radiance_head(c, cfg.rad, f.prefix, f.hidden, img, pixels, dct,
                                         cfg.rad.x0 ? timesteps : nullptr);
        return nn::crop_latent(c.ctx, out, W, H);
    }
    ggml_tensor* img = flux_image_tokens(c, f, x);
    img = flux_blocks(c, f, img, txt, mods, pe_cos, pe_sin, key_mask, skip);
    img = flux_final_layer(c, f, img, row(kChromaModRows - 2), row(kChromaModRows - 1));
    return nn::crop_latent(c.ctx, nn::unpatchify(c.ctx, img, w, h, ps), W, H);
}

}  // namespace ggdiff::models
