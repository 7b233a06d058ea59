// Chroma1-Radiance's pixel-space ends of the Chroma DiT (no VAE): img_in_patch turns RGB
// pixels into one token per patch (a strided convolution), and the NeRF head turns the DiT's
// output tokens back into pixels. For each patch the head embeds every pixel (its colour and
// a fixed 2-D cosine (DCT) code of its place in the patch), then runs `depth` GLU MLPs whose
// weights are generated per patch from that patch's DiT token (param_generator; each weight
// column L2-normalised), and ends in an RMSNorm and a 3x3 convolution over the whole image.
// Names are the original single-file ones under a prefix such as "model.diffusion_model.":
// img_in_patch, nerf_image_embedder.embedder.0, nerf_blocks.{i}.param_generator / .norm.scale,
// nerf_final_layer_conv.norm.scale / .conv. Numerics follow stable-diffusion.cpp's flux.hpp
// (Flux::forward_chroma_radiance), which made the golden images.
// The head reads the DiT's image tokens straight after the last single block: Radiance has no
// final_layer (the approximator's rows 342 and 343 go unused).
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "io/tensor_index.h"
#include "nn/weights.h"

namespace ggdiff::models {

struct RadianceConfig {
    int patch = 16;  // 32 with the "__32x32__" marker tensor
    bool fake_patch_x2 =
        false;        // img_in_patch kernel = patch/2: input downscaled 2x (bilinear) first
    bool x0 = false;  // "__x0__" marker: the head predicts x0, turned into a flow velocity
    int64_t channels = 3, nerf_hidden = 64, mlp_ratio = 4, depth = 4, max_freqs = 8;
};

// Reads patch size / markers / shapes of img_in_patch and nerf_* under prefix; errors name the
// tensor.
Result<RadianceConfig> detect_radiance(const TensorIndex& index, const std::string& prefix);

// Host table of the pixels' position code: [max_freqs^2, patch^2] floats (feature-major as
// the reference lays it): entry (fx * max_freqs + fy) of in-patch position p = row * patch + col
// is cos(pi fx col/(patch-1)) cos(pi fy row/(patch-1)) / (1 + fx fy).
std::vector<float> radiance_dct(int patch, int max_freqs);

// pixels [W, H, C, N] already zero-padded to multiples of cfg.patch -> tokens
// [hidden, (W/p)*(H/p), N] in row-major patch order (img_in_patch conv, after the 2x bilinear
// downscale when fake_patch_x2).
ggml_tensor* radiance_patch_in(nn::Ctx& c, const RadianceConfig& cfg, const std::string& prefix,
                               int64_t hidden, ggml_tensor* pixels);

// The NeRF head: tokens [hidden, T, N] (the DiT's image-token outputs, T = patches of `pixels`),
// pixels the same padded input, dct [max_freqs^2, patch^2] (from radiance_dct), timesteps [N]
// or [1] for the whole batch (sigma; read only with cfg.x0, may be null otherwise) -> the
// prediction [W, H, C, N] of the padded size (caller crops).
ggml_tensor* radiance_head(nn::Ctx& c, const RadianceConfig& cfg, const std::string& prefix,
                           int64_t hidden, ggml_tensor* tokens, ggml_tensor* pixels,
                           ggml_tensor* dct, ggml_tensor* timesteps);

}  // namespace ggdiff::models
