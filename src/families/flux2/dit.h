// The FLUX.2 diffusion transformer (klein 4B/9B, dev) in BFL's single-file naming under a
// prefix such as "model.diffusion_model.": img_in, txt_in, time_in, guidance_in (dev only),
// double_blocks.{i} (image and text streams with joint attention), single_blocks.{i} (one
// fused stream), final_layer, and the three modulation layers every block shares
// (double_stream_modulation_img / _txt: shift, scale, gate for attention then for the MLP;
// single_stream_modulation: shift, scale, gate). Unlike FLUX.1: no biases, no vector_in,
// SwiGLU MLPs (silu(first half) * second half), patch size 1 (the 2x2 patching lives in the
// VAE latent of 128 channels), RoPE over four axes of 32 with theta 2000. Reference images
// join the image stream as extra tokens and are dropped from the output.
// Numerics follow stable-diffusion.cpp's flux.hpp (FLUX2 branches), which made the goldens.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/host_tensor.h"
#include "core/status.h"
#include "io/tensor_index.h"
#include "nn/dit.h"
#include "nn/weights.h"

namespace ggdiff::models {

struct Flux2Config {
    std::string prefix = "model.diffusion_model.";
    int64_t in_channels = 128;   // latent channels (patch size 1)
    int64_t out_channels = 128;  // predicted channels
    int64_t hidden = 3072;
    int64_t heads = 24;
    int64_t head_dim = 128;
    int64_t mlp_hidden = 9216;    // SwiGLU width (its input projection has twice the rows)
    int64_t context_dim = 7680;   // text context width (txt_in's input)
    int depth = 5;                // double blocks
    int depth_single = 20;        // single blocks
    bool guidance_embed = false;  // dev: guidance_in present; klein: absent
    // diffusers layout (families/flux2/names.cpp): a double block's q, k, v kept apart,
    // final modulation stored (scale, shift) as final_layer.adaLN_scale_shift.
    bool split_qkv = false;
    bool final_scale_first = false;
    float theta = 2000.0f;
    std::vector<int> axes_dim{32, 32, 32, 32};
    // Reference image k (1, 2, ...) sits at index position k * ref_index_scale.
    float ref_index_scale = 10.0f;
    // SeFi-Image: dual_time_embed.{semantic,texture}_embedder.linear_{1,2} (256 sinusoidal
    // features of the raw model timestep, Linear, SiLU, Linear, each half the hidden width,
    // concatenated) instead of time_in; the batch shares one (semantic, texture) timestep pair.
    bool dual_time = false;
};

// Reads the architecture from the weights under `prefix`; errors name the first missing or
// mis-shaped tensor.
Result<Flux2Config> detect_flux2(const TensorIndex& index,
                                 const std::string& prefix = "model.diffusion_model.");

// The position ids (4 per token, token-major) of `text_tokens` text tokens, then a latent of
// w x h (one token per latent pixel, row-major), then each reference latent (width, height):
// text token i is (0, 0, 0, i), image token (0, row, col, 0), reference k = 1, 2, ... is
// (k * ref_index_scale, row, col, 0) with its own rows and columns from 0.
using Flux2RefSize = std::pair<int64_t, int64_t>;  // (width, height) of a reference latent
std::vector<float> flux2_position_ids(const Flux2Config& cfg, int64_t latent_w, int64_t latent_h,
                                      int64_t text_tokens, const std::vector<Flux2RefSize>& refs);

// The RoPE angles of those positions: cos and sin, each [1, head_dim/2, 1, tokens]. With
// `wrap` (seamless tiling) the rows / columns of the image and of each reference wrap around
// on their own size; text tokens never wrap.
struct Flux2Positions {
    HostTensor cos, sin;
};
Flux2Positions flux2_positions(const Flux2Config& cfg, int64_t latent_w, int64_t latent_h,
                               int64_t text_tokens, const std::vector<Flux2RefSize>& refs = {},
                               nn::RopeWrap wrap = {});

// x [W, H, in_channels, N] (any W, H), timesteps [N] (sigma in [0, 1]; with dual_time [2]: the
// semantic and the texture timestep in 0..1000, shared by the batch), context
// [context_dim, L, N] (or [context_dim, L, 1] for the whole batch), refs: reference latents
// [w_k, h_k, in_channels, 1] shared by the batch (may be empty), guidance [N] (dev; ignored
// without guidance_embed; may be null), pe from flux2_positions(W, H, L, ref sizes) ->
// flow prediction [W, H, out_channels, N]. `skip` (skip-layer guidance; null or empty: none)
// lists blocks that pass their inputs through unchanged: double block i is number i, single
// block i is number depth + i (as the reference numbers them).
ggml_tensor* build_flux2(nn::Ctx& c, const Flux2Config& cfg, ggml_tensor* x, ggml_tensor* timesteps,
                         ggml_tensor* context, const std::vector<ggml_tensor*>& refs,
                         ggml_tensor* guidance, ggml_tensor* pe_cos, ggml_tensor* pe_sin,
                         const std::vector<int>* skip = nullptr);

}  // namespace ggdiff::models
