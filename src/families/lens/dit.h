// The Lens DiT (Comfy-Org/Lens, Lens Turbo): MMDiT blocks "transformer_blocks.N" with joint
// image-text attention (fused img_qkv / txt_qkv projections with biases, per-head RMS-normed
// q and k, 3-axis RoPE), RMSNorm + adaLN modulation on both streams, SwiGLU MLPs
// (w2(silu(w1 x) * w3 x)). The text is GPT-OSS's hidden states after several layers, each
// RMS-normed on its own (txt_norm.N) and projected together (txt_in). The latent is the
// FLUX.2 VAE's 2x2-patchified 128 channels: one token per latent pixel.
//
// Sizes come from the weights: width and latent channels (img_in), head width (norm_q),
// heads, text states (txt_norm.N, each 2880 wide: GPT-OSS-20B's), depth, MLP width (w1).
#pragma once

#include <string>
#include <vector>

#include "core/host_tensor.h"
#include "core/status.h"
#include "io/tensor_index.h"
#include "nn/dit.h"
#include "nn/weights.h"

namespace ggdiff::models {

struct LensConfig {
    std::string prefix = "model.diffusion_model.";
    int64_t width = 1536;
    int64_t head_dim = 64;
    int64_t heads = 24;
    int64_t channels = 128;     // latent channels in and out (img_in / proj_out)
    int64_t text_width = 2880;  // one LLM state (txt_norm.N)
    int64_t text_states = 4;    // how many are stacked per token
    int64_t layers = 48;
    int64_t mlp = 4096;
    std::vector<int> axes_dim = {8, 28, 28};
    float theta = 10000.0f;
};

// True for a Lens DiT under the prefix.
bool is_lens(const TensorIndex& index, const std::string& prefix = "model.diffusion_model.");
Result<LensConfig> detect_lens(const TensorIndex& index,
                               const std::string& prefix = "model.diffusion_model.");

// RoPE tables for a w x h latent and L text tokens (image tokens first): cos and sin
// [1, pairs, 1, tokens]. As stable-diffusion.cpp numbers them: image token (y, x) at
// (0, y - h/2, x - w/2), text token j at max(h/2, w/2) + j * L / (L - 1) on all three axes
// (a linspace over L + 1 positions' span). With `wrap` the image rows / columns wrap around.
struct LensRope {
    HostTensor cos, sin;
};
LensRope lens_rope(const LensConfig& cfg, int64_t w, int64_t h, int64_t text_tokens,
                   nn::RopeWrap wrap = {});

// x [w, h, channels, N], timesteps [N] (sigma), context [text_width * text_states, L, N],
// cos/sin from lens_rope -> flow velocity [w, h, channels, N].
ggml_tensor* build_lens(nn::Ctx& c, const LensConfig& cfg, ggml_tensor* x, ggml_tensor* timesteps,
                        ggml_tensor* context, ggml_tensor* cos, ggml_tensor* sin);

}  // namespace ggdiff::models
