// The ERNIE-Image DiT (Baidu's ErnieImageTransformer2DModel): one stream of identical layers
// over the image tokens followed by the text tokens. The latent (the FLUX.2 VAE's 128-channel
// patchified latent) enters through a patch convolution ("x_embedder.proj", patch 1 in the
// released model), the text features through a linear ("text_proj", absent when the text is
// already as wide as the model). Every layer shares ONE set of six modulation vectors,
// adaLN_modulation.1(silu(c)) with c = time_embedding(timestep), and is
//   x += gate_msa * attn(RMSNorm(x) * (1 + scale_msa) + shift_msa)
//   x += gate_mlp * mlp(RMSNorm(x) * (1 + scale_mlp) + shift_mlp)
// with separate to_q / to_k / to_v (no biases), per-head q/k RMSNorm, RoPE, attention over
// every token (no mask), and mlp = linear_fc2(gelu(gate_proj(x)) * up_proj(x)). The end is
// LayerNorm (no affine) * (1 + scale) + shift with (scale, shift) = final_norm.linear(c) (no
// SiLU), then final_linear back to patches; the text tokens are dropped.
//
// As stable-diffusion.cpp runs it: the timestep is the sampler's (1000 * sigma) in 'hidden'
// sinusoidal features with the sine half FIRST; RoPE theta 256 over 3 axes of 32 / 48 / 48
// head dimensions, image patch (y, x) at (text tokens, y, x) and text token j at (j, 0, 0).
// Its RoPE layout is its own: the angle of pair i (0..63 over the three axes) is repeated at
// head dimensions 2i and 2i + 1, and the rotation pairs dimension j with j + 64 (rotate-half):
//   out[j]      = x[j] cos[j] - x[j + 64] sin[j]
//   out[j + 64] = x[j + 64] cos[j + 64] + x[j] sin[j + 64]      (j < 64)
// so the two halves of a rotated pair turn at different frequencies. ggdiff does the same.
//
// Sizes come from the weights: width, input channels and patch (x_embedder.proj), text width
// (text_proj), head width (norm_q), MLP width (gate_proj), output channels (final_linear),
// depth (layers.N).
#pragma once

#include <string>
#include <vector>

#include "core/host_tensor.h"
#include "core/status.h"
#include "io/tensor_index.h"
#include "nn/dit.h"
#include "nn/weights.h"

namespace ggdiff::models {

struct ErnieImageConfig {
    std::string prefix = "model.diffusion_model.";
    int64_t hidden = 4096;
    int64_t heads = 32;
    int64_t head_dim = 128;
    int64_t layers = 36;
    int64_t ffn = 12288;
    int64_t in_channels = 128;
    int64_t out_channels = 128;
    int64_t text_width = 3072;  // the text features' width (text_proj's input)
    bool text_proj = true;      // false: the text is already `hidden` wide
    int patch = 1;
    std::vector<int> axes_dim = {32, 48, 48};
    float theta = 256.0f;
    float eps = 1e-6f;
};

// True for an ERNIE-Image DiT under the prefix (layers.0.adaLN_sa_ln.weight is its mark).
bool is_ernie_image(const TensorIndex& index, const std::string& prefix = "model.diffusion_model.");
Result<ErnieImageConfig> detect_ernie_image(const TensorIndex& index,
                                            const std::string& prefix = "model.diffusion_model.");

// The RoPE factors of one call, host side, in ERNIE-Image's layout: cos and sin
// [head_dim, 1, tokens] (image patches row-major first, then the text tokens). With `wrap`
// (seamless tiling) the image rows / columns wrap around on the patch grid.
struct ErnieImageRope {
    HostTensor cos, sin;
};
ErnieImageRope ernie_image_rope(const ErnieImageConfig& cfg, int64_t grid_w, int64_t grid_h,
                                int64_t text_tokens, nn::RopeWrap wrap = {});

// x [w, h, in_channels, N] latent (w, h multiples of the patch), timesteps [N] (1000 *
// sigma), context [text_width, L, N], cos/sin from ernie_image_rope -> flow velocity
// [w, h, out_channels, N].
ggml_tensor* build_ernie_image(nn::Ctx& c, const ErnieImageConfig& cfg, ggml_tensor* x,
                               ggml_tensor* timesteps, ggml_tensor* context, ggml_tensor* cos,
                               ggml_tensor* sin);

// One layer alone (bench and tests): x [hidden, T, N], mod [6 * hidden, N] (the shared
// modulation: shift, scale, gate for attention, then for the MLP).
ggml_tensor* build_ernie_image_layer(nn::Ctx& c, const ErnieImageConfig& cfg,
                                     const std::string& name, ggml_tensor* x, ggml_tensor* mod,
                                     ggml_tensor* cos, ggml_tensor* sin);

}  // namespace ggdiff::models
