// The Qwen Image DiT (and Qwen Image Layered): MMDiT blocks "transformer_blocks.N" with
// joint text-image attention (per-head RMS-normed q/k, 3-axis RoPE over frame, row and
// column), adaLN modulation from the timestep embedding, 2x2 patches of the 16-channel
// latent. The Layered variant carries its layers on a frame axis (temporal patch 1) and adds
// a learned embedding of its (zero) addition_t_cond to the timestep embedding.
//
// Sizes come from the weights: width (img_in), heads (norm_q width), text width (txt_in),
// depth (transformer_blocks.N), MLP width, Layered (time_text_embed.addition_t_embedding),
// zero_cond_t (a "__index_timestep_zero__" marker tensor, Qwen Image Edit 2511).
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "io/tensor_index.h"
#include "nn/dit.h"
#include "nn/weights.h"

namespace ggdiff::models {

struct QwenImageConfig {
    std::string prefix = "model.diffusion_model.";
    int64_t width = 3072;
    int64_t head_dim = 128;
    int64_t heads = 24;
    int64_t text_width = 3584;
    int64_t layers = 60;
    int64_t mlp = 12288;
    int64_t latent_channels = 16;  // in_channels / (patch * patch)
    int patch = 2;
    bool layered = false;
    // Qwen Image Edit 2511: reference tokens are modulated with the embedding of timestep 0
    // (the image and text tokens with the step's). Marked in ComfyUI files by a tensor named
    // "__index_timestep_zero__"; --qwen-image-zero-cond-t forces it.
    bool zero_cond_t = false;
    std::vector<int> axes_dim = {16, 56, 56};
    float theta = 10000.0f;
};

// True for a Qwen Image DiT under the prefix.
bool is_qwen_image(const TensorIndex& index, const std::string& prefix = "model.diffusion_model.");
Result<QwenImageConfig> detect_qwen_image(const TensorIndex& index,
                                          const std::string& prefix = "model.diffusion_model.");

// Reference latents ride along as extra image tokens. Their frame index and placement, as
// stable-diffusion.cpp numbers them: Fixed (the default) puts every reference at frame 1,
// uncentred, each next to the ones before it (below or to the right, whichever keeps the
// layout squarer, offsets counted in latent pixels); Increase (--increase-ref-index) gives
// them frames 1, 2, ... centred; Decrease (Layered) frames -1, -2, ... centred.
struct QwenImageRef {
    int64_t w = 0, h = 0;  // latent size
};
enum class QwenRefIndex { Fixed, Increase, Decrease };

// The RoPE angles of one call, host side: cos and sin [pairs, tokens] for the text tokens,
// then the T x h x w image tokens (h, w after padding to the patch size), then each
// reference's tokens. With `wrap` (seamless tiling) the rows / columns of the image and of
// each reference wrap around on their own patch grid (nn::rope_angle); text never does.
struct QwenImageRope {
    std::vector<float> cos, sin;
    int64_t pairs = 0, tokens = 0;
};
QwenImageRope qwen_image_rope(const QwenImageConfig& cfg, int64_t frames, int64_t w, int64_t h,
                              int64_t text_tokens, const std::vector<QwenImageRef>& refs,
                              QwenRefIndex ref_index, nn::RopeWrap wrap = {});

// x [w, h, frames * C, N] (channel index c * frames + f), timesteps [N], context
// [text_width, L, N], cos/sin [1, pairs, 1, tokens] -> velocity of x's shape. refs: each
// [w_r, h_r, C, 1] (one frame), shared by the batch.
ggml_tensor* build_qwen_image(nn::Ctx& c, const QwenImageConfig& cfg, ggml_tensor* x,
                              int64_t frames, ggml_tensor* timesteps, ggml_tensor* context,
                              ggml_tensor* cos, ggml_tensor* sin,
                              const std::vector<ggml_tensor*>& refs = {});

}  // namespace ggdiff::models
