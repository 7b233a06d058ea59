// The SD3 / SD3.5 MMDiT (Medium, Large, Large Turbo; SD3.5 Medium's MMDiT-X) in the
// original single-file naming under a prefix such as "model.diffusion_model.".
//
// The latent is cut into 2x2 patches by x_embedder (a stride-2 convolution; an odd side is
// zero-padded right/bottom first and the output cropped back), plus pos_embed: a learned
// square grid of positions, centre-cropped to the patch grid. c = t_embedder(sinusoidal
// features of the timestep) + y_embedder(pooled text); context = context_embedder(text
// tokens). Each joint_blocks.N has a context_block and an x_block, both adaLN-modulated by
// silu(c) (shift/scale/gate for attention and MLP; LayerNorms without affine, eps 1e-6):
// their q/k/v (optionally RMS- or Layer-normed per head: attn.ln_q / attn.ln_k) meet in one
// attention over context tokens then image tokens. The last block's context_block is
// pre_only (only shift/scale and qkv: the context stream ends there). MMDiT-X blocks (SD3.5
// Medium's first ones) add x_block.attn2: image-only self-attention from the same normed x
// with its own shift/scale/gate (9 modulation chunks). final_layer: modulated LayerNorm and
// a linear back to patches. Numerics follow stable-diffusion.cpp's mmdit.hpp, which made
// the golden images.
//
// Sizes come from the weights: hidden and patch (x_embedder), latent channels, pooled and
// context widths, the position grid (pos_embed), head width (ln_q; heads = depth without
// q/k norm, as SD3 Medium's 24 heads of 64), MLP width, the MMDiT-X blocks (attn2).
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "io/tensor_index.h"
#include "nn/weights.h"

namespace ggdiff::models {

struct Sd3Config {
    std::string prefix = "model.diffusion_model.";
    int64_t hidden = 1536;
    int64_t heads = 24;
    int64_t head_dim = 64;
    int64_t mlp_hidden = 6144;
    int64_t in_channels = 16;   // latent channels
    int64_t out_channels = 16;  // predicted channels
    int64_t context_dim = 4096;
    int64_t pooled_dim = 2048;  // y_embedder input (CLIP-L + bigG pooled); 0: none
    int64_t pos_grid = 192;     // pos_embed is a pos_grid x pos_grid grid of positions
    int depth = 24;
    int patch = 2;
    enum class QkNorm { None, Rms, Layer } qk_norm = QkNorm::None;
    std::vector<bool> self_attn;  // per block: x_block.attn2 (MMDiT-X)
    // diffusers form (families/sd3/names.cpp): separate q/k/v as attn.q / attn.k / attn.v.
    bool split_qkv = false;
    // The final (and pre-only context) modulation stored (scale, shift) as adaLN_scale_shift.
    bool scale_first = false;

    int mmdit_x_blocks() const;
};

// Reads the architecture from the weights under the prefix; errors name the first missing
// or mis-shaped tensor.
Result<Sd3Config> detect_sd3(const TensorIndex& index,
                             const std::string& prefix = "model.diffusion_model.");

// Whether a latent of w x h pixels fits the position grid (at most pos_grid patches a side).
Status check_sd3_size(const Sd3Config& cfg, int64_t latent_w, int64_t latent_h);

// x [W, H, C, N], timesteps [N] (the model's time, sigma * 1000), context [context_dim, L, N]
// (or N = 1 for the whole batch), y [pooled_dim, N] (null without y_embedder) -> the flow
// velocity [W, H, C, N]. Blocks listed in `skip` pass both streams through unchanged
// (skip-layer guidance).
ggml_tensor* build_sd3(nn::Ctx& c, const Sd3Config& cfg, ggml_tensor* x, ggml_tensor* timesteps,
                       ggml_tensor* context, ggml_tensor* y, const std::vector<int>& skip = {});

// One joint block alone (bench): x [hidden, T, N], context [hidden, L, N], vec [hidden, N];
// updates x and context (context becomes null after a pre-only block).
void build_sd3_block(nn::Ctx& c, const Sd3Config& cfg, int index, ggml_tensor*& x,
                     ggml_tensor*& context, ggml_tensor* vec);

}  // namespace ggdiff::models
