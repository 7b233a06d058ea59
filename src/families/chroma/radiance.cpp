#include "families/chroma/radiance.h"

#include <ggml.h>

#include <cmath>

#include "io/name_util.h"
#include "io/tensor_probe.h"
#include "nn/dit.h"
#include "nn/layers.h"

namespace ggdiff::models {

namespace {

constexpr float kNormEps = 1e-6f;
constexpr float kL2Eps = 1e-12f;

// Whether a tensor under `prefix` carries `marker` in its name (ComfyUI's way of flagging
// variants: "__x0__", "__32x32__").
bool has_marker(const TensorIndex& index, const std::string& prefix, const char* marker) {
    for (const TensorInfo& t : index.tensors()) {
        if (starts_with(t.name, prefix) && t.name.find(marker) != std::string::npos) return true;
    }
    return false;
}

// One of the three generated matrices of a NeRF block, as the right operand of a product over
// the pixel features: chunk `k` of params [3*rows*cols, B] read as [cols, rows, B] (torch's
// view(B, rows, cols)), transposed to [rows, cols, B] and L2-normalised over `rows` (torch's
// F.normalize(dim=-2)), so that ggml_mul_mat(result, x [rows, P, B]) is x @ W.
ggml_tensor* generated_matrix(ggml_context* ctx, ggml_tensor* params, int k, int64_t rows,
                              int64_t cols) {
    const size_t es = ggml_element_size(params);
    ggml_tensor* w = ggml_view_3d(ctx, params, cols, rows, params->ne[1], cols * es, params->nb[1],
                                  static_cast<size_t>(k) * rows * cols * es);
    w = ggml_cont(ctx, ggml_transpose(ctx, w));  // [rows, cols, B]
    return ggml_l2_norm(ctx, w, kL2Eps);
}

}  // namespace

Result<RadianceConfig> detect_radiance(const TensorIndex& index, const std::string& prefix) {
    const TensorProbe p{index, prefix, "Chroma Radiance"};
    RadianceConfig cfg;
    cfg.x0 = has_marker(index, prefix, "__x0__");
    cfg.patch = has_marker(index, prefix, "__32x32__") ? 32 : 16;

    auto patch_in = p.shape("img_in_patch.weight", 4);
    if (!patch_in.ok()) return patch_in.status();
    const int64_t hidden = (*patch_in)[0];
    cfg.channels = (*patch_in)[1];
    const int64_t kernel = (*patch_in)[2];
    if ((*patch_in)[3] != kernel || cfg.channels <= 0) {
        return p.odd("img_in_patch.weight", "expected a square kernel");
    }
    if (kernel * 2 == cfg.patch) {
        cfg.fake_patch_x2 = true;
    } else if (kernel != cfg.patch) {
        return p.odd("img_in_patch.weight", "kernel is neither the patch size " +
                                                std::to_string(cfg.patch) + " nor half of it");
    }

    const std::string embed = "nerf_image_embedder.embedder.0.weight";
    auto emb = p.shape(embed, 2);
    if (!emb.ok()) return emb.status();
    cfg.nerf_hidden = (*emb)[0];
    const int64_t features = (*emb)[1] - cfg.channels;
    cfg.max_freqs = static_cast<int64_t>(std::lround(std::sqrt(static_cast<double>(features))));
    if (cfg.nerf_hidden <= 0 || features <= 0 || cfg.max_freqs * cfg.max_freqs != features) {
        return p.odd(embed, "input is not " + std::to_string(cfg.channels) +
                                " colour channels plus a square number of position features");
    }

    cfg.depth = 0;
    while (p.has("nerf_blocks." + std::to_string(cfg.depth) + ".param_generator.weight")) {
        const std::string b = "nerf_blocks." + std::to_string(cfg.depth) + ".";
        auto gen = p.shape(b + "param_generator.weight", 2);
        if (!gen.ok()) return gen.status();
        const int64_t square = 3 * cfg.nerf_hidden * cfg.nerf_hidden;
        if ((*gen)[1] != hidden || (*gen)[0] % square != 0 || (*gen)[0] == 0) {
            return p.odd(b + "param_generator.weight",
                         "expected [3 * " + std::to_string(cfg.nerf_hidden) + "^2 * mlp ratio, " +
                             std::to_string(hidden) + "]");
        }
        const int64_t ratio = (*gen)[0] / square;
        if (cfg.depth > 0 && ratio != cfg.mlp_ratio) {
            return p.odd(b + "param_generator.weight", "MLP ratio differs from block 0's");
        }
        cfg.mlp_ratio = ratio;
        auto norm = p.shape(b + "norm.scale", 1);
        if (!norm.ok()) return norm.status();
        if ((*norm)[0] != cfg.nerf_hidden) return p.odd(b + "norm.scale", "not the NeRF width");
        ++cfg.depth;
    }
    if (cfg.depth == 0) return p.missing("nerf_blocks.0.param_generator.weight");

    auto fnorm = p.shape("nerf_final_layer_conv.norm.scale", 1);
    if (!fnorm.ok()) return fnorm.status();
    if ((*fnorm)[0] != cfg.nerf_hidden) {
        return p.odd("nerf_final_layer_conv.norm.scale", "not the NeRF width");
    }
    auto conv = p.shape("nerf_final_layer_conv.conv.weight", 4);
    if (!conv.ok()) return conv.status();
    if ((*conv)[0] != cfg.channels || (*conv)[1] != cfg.nerf_hidden || (*conv)[2] != 3 ||
        (*conv)[3] != 3) {
        return p.odd("nerf_final_layer_conv.conv.weight",
                     "expected [" + std::to_string(cfg.channels) + ", " +
                         std::to_string(cfg.nerf_hidden) + ", 3, 3]");
    }
    return cfg;
}

std::vector<float> radiance_dct(int patch, int max_freqs) {
    // Single-precision arithmetic in the reference's order, so that the table is bit-equal.
    const float pi = 3.14159265358979323846f;
    const int positions = patch * patch, features = max_freqs * max_freqs;
    std::vector<float> dct(static_cast<size_t>(positions) * features);
    const float span = static_cast<float>(patch > 1 ? patch - 1 : 1);
    for (int row = 0; row < patch; ++row) {
        const float py = static_cast<float>(row) / span;
        for (int col = 0; col < patch; ++col) {
            const float px = static_cast<float>(col) / span;
            float* out = &dct[static_cast<size_t>(row * patch + col) * features];
            for (int fx = 0; fx < max_freqs; ++fx) {
                const float cx = std::cos(px * static_cast<float>(fx) * pi);
                for (int fy = 0; fy < max_freqs; ++fy) {
                    const float cy = std::cos(py * static_cast<float>(fy) * pi);
                    const float weight =
                        1.0f / (1.0f + static_cast<float>(fx) * static_cast<float>(fy));
                    out[fx * max_freqs + fy] = cx * cy * weight;
                }
            }
        }
    }
    return dct;
}

ggml_tensor* radiance_patch_in(nn::Ctx& c, const RadianceConfig& cfg, const std::string& prefix,
                               int64_t hidden, ggml_tensor* pixels) {
    int kernel = cfg.patch;
    if (cfg.fake_patch_x2) {
        // The reference's choice (its comment: nearest would be torch's, bilinear is steadier).
        pixels = ggml_interpolate(c.ctx, pixels, pixels->ne[0] / 2, pixels->ne[1] / 2,
                                  pixels->ne[2], pixels->ne[3], GGML_SCALE_MODE_BILINEAR);
        kernel = cfg.patch / 2;
    }
    ggml_tensor* grid =
        nn::conv2d(c, pixels, prefix + "img_in_patch", cfg.channels, hidden, kernel, kernel, 0);
    return nn::image_to_tokens(c.ctx, grid);  // [hidden, (W/p)*(H/p), N]
}

ggml_tensor* radiance_head(nn::Ctx& c, const RadianceConfig& cfg, const std::string& prefix,
                           int64_t hidden, ggml_tensor* tokens, ggml_tensor* pixels,
                           ggml_tensor* dct, ggml_tensor* timesteps) {
    ggml_context* ctx = c.ctx;
    const int p = cfg.patch;
    const int64_t W = pixels->ne[0], H = pixels->ne[1], C = cfg.channels, N = pixels->ne[3];
    const int64_t w = W / p, h = H / p, T = w * h, B = T * N, P = int64_t{p} * p;
    const int64_t nh = cfg.nerf_hidden, wide = cfg.mlp_ratio * nh;
    const int64_t features = cfg.max_freqs * cfg.max_freqs;

    // Every patch's pixels as a batch item: [C, P, B] (colour innermost, in-patch position
    // row * p + col), followed by the position code: [C + F, P, B] -> [nh, P, B].
    ggml_tensor* px = ggml_reshape_3d(ctx, nn::patchify(ctx, pixels, p), P, C, B);
    px = ggml_cont(ctx, ggml_transpose(ctx, px));
    ggml_tensor* code = ggml_repeat_4d(ctx, dct, features, P, B, 1);
    ggml_tensor* x = nn::linear(c, ggml_concat(ctx, px, code, 0),
                                prefix + "nerf_image_embedder.embedder.0", C + features, nh);

    // Each patch's DiT token generates its blocks' weights.
    if (!ggml_is_contiguous(tokens)) tokens = ggml_cont(ctx, tokens);
    ggml_tensor* s = ggml_reshape_2d(ctx, tokens, hidden, B);
    for (int64_t i = 0; i < cfg.depth; ++i) {
        const std::string b = prefix + "nerf_blocks." + std::to_string(i) + ".";
        ggml_tensor* params = nn::linear(c, s, b + "param_generator", hidden, 3 * nh * wide);
        ggml_tensor* gate = generated_matrix(ctx, params, 0, nh, wide);   // [nh, wide, B]
        ggml_tensor* value = generated_matrix(ctx, params, 1, nh, wide);  // [nh, wide, B]
        ggml_tensor* down = generated_matrix(ctx, params, 2, wide, nh);   // [wide, nh, B]
        ggml_tensor* xn = nn::rms_norm(c, x, b + "norm.scale", nh, kNormEps);
        ggml_tensor* act = ggml_mul(ctx, ggml_silu(ctx, ggml_mul_mat(ctx, gate, xn)),
                                    ggml_mul_mat(ctx, value, xn));  // [wide, P, B]
        x = ggml_add(ctx, x, ggml_mul_mat(ctx, down, act));
    }

    // The final RMSNorm is per pixel over the nh features, so it runs before the pixels go
    // back to their places; then [nh, P, B] -> [P * nh, T, N] (features (channel, row, col))
    // -> image [W, H, nh, N], and the 3x3 convolution.
    x = nn::rms_norm(c, x, prefix + "nerf_final_layer_conv.norm.scale", nh, kNormEps);
    x = ggml_reshape_3d(ctx, ggml_cont(ctx, ggml_transpose(ctx, x)), P * nh, T, N);
    x = nn::unpatchify(ctx, x, w, h, p);
    ggml_tensor* out = nn::conv2d(c, x, prefix + "nerf_final_layer_conv.conv", nh, C, 3, 1, 1);
    if (cfg.x0) {
        // The head predicted the clean image; the flow velocity is (x_t - x0) / sigma.
        out = ggml_div(ctx, ggml_sub(ctx, pixels, out),
                       ggml_reshape_4d(ctx, timesteps, 1, 1, 1, timesteps->ne[0]));
    }
    return out;
}

}  // namespace ggdiff::models
