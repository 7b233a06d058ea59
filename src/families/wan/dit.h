// The Wan 2.1 / 2.2 video DiT (text-to-video layout): a latent video [w, h, C, T] is cut into
// 1x2x2 patches (a 3-D convolution with stride = kernel, i.e. a linear over each patch),
// one token per patch, frames first, then rows, then columns. Every block is
//   x += gate0 * self_attn(LN(x) * (1 + scale0) + shift0)     (3-axis RoPE over t, y, x)
//   x += cross_attn(LN_affine(x), text)                        (no gate, no mask)
//   x += gate1 * ffn(LN(x) * (1 + scale1) + shift1)            (GELU-tanh)
// with q and k RMS-normalised over the whole width before the head split, and the six
// modulation vectors time_projection(SiLU(e)) + the block's own "modulation" table, where
// e = time_embedding(sinusoidal(t)) (t = sigma * 1000). The text features (umT5, 4096 wide)
// pass text_embedding (Linear, GELU-tanh, Linear). The head is LayerNorm, (1 + scale) and
// shift from e + head.modulation, and a linear back to patches.
//
// Sizes come from the weights: width and input channels (patch_embedding), heads (width / 128),
// FFN width (ffn.0), text width (text_embedding.0), time-embedding width (time_embedding.0),
// output channels (head.head), depth (blocks.N). The RoPE splits each 128-wide head into
// 44 / 42 / 42 dimensions for frame / row / column (theta 10000), as the Wan models do.
//
// Tensors under `prefix` in the original Wan / ComfyUI names: patch_embedding,
// text_embedding.{0,2}, time_embedding.{0,2}, time_projection.1, blocks.N.{modulation,
// self_attn.{q,k,v,o,norm_q,norm_k}, norm3, cross_attn.{q,k,v,o,norm_q,norm_k}, ffn.{0,2}},
// head.{modulation,head}.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "io/tensor_index.h"
#include "nn/weights.h"

namespace ggdiff::models {

struct WanConfig {
    std::string prefix = "model.diffusion_model.";
    int64_t width = 1536;
    int64_t heads = 12;
    int64_t head_dim = 128;
    int64_t ffn = 8960;
    int64_t text_width = 4096;
    int64_t freq_dim = 256;
    int64_t in_channels = 16;
    int64_t out_channels = 16;
    int64_t layers = 30;
    bool cross_attn_norm = true;  // norm3 (LayerNorm with affine) before cross-attention
    // img_emb: image-to-video with CLIP vision features (Wan 2.1 I2V, FLF2V): an MLP from
    // image_width-wide CLIP tokens to the width; every block's cross-attention then also
    // attends to them (k_img, v_img, norm_k_img).
    bool image_embedding = false;
    int64_t image_width = 1280;
    // img_emb.emb_pos (FLF2V): positions added to the first and last frames' CLIP tokens.
    int64_t image_positions = 0;
    // VACE (vace_blocks.N, vace_patch_embedding): a second stack of blocks on the control
    // context, vace_in_channels per frame (inactive and reactive latents, then the mask's
    // 8x8 pixels per latent pixel); VACE block n runs after main block n * layers /
    // vace_layers and adds its after_proj output, times the strength, to the main stream.
    int64_t vace_layers = 0;
    int64_t vace_in_channels = 96;
    std::vector<int> axes_dim = {44, 42, 42};
    float theta = 10000.0f;
    float eps = 1e-6f;

    // "1.3B", "14B", "5B" or the width when none of those.
    std::string size_name() const;
};

// True when the weights under `prefix` are a Wan DiT (patch_embedding and the blocks'
// cross-attention).
bool is_wan_dit(const TensorIndex& index, const std::string& prefix = "model.diffusion_model.");

// Reads the architecture; errors name the first missing or mis-shaped tensor.
Result<WanConfig> detect_wan_dit(const TensorIndex& index,
                                 const std::string& prefix = "model.diffusion_model.");

// The RoPE angles of a t x h x w grid of patches (the latent's frames, rows / 2, columns / 2),
// frames first: cos and sin [tokens][pairs].
struct WanRope {
    std::vector<float> cos, sin;
    int64_t pairs = 0, tokens = 0;
};
WanRope wan_rope(const WanConfig& cfg, int64_t frames, int64_t grid_h, int64_t grid_w);

// Inputs beyond the latent and the text; null: none.
struct WanExtras {
    // [image_width, tokens, N]: CLIP vision tokens (257 per image) for img_emb DiTs.
    ggml_tensor* image = nullptr;
    // [w, h, vace_in_channels * T, 1]: the VACE context for vace_blocks DiTs (frames laid out
    // as x's), the same for every batch item; required when cfg.vace_layers > 0.
    ggml_tensor* vace = nullptr;
    float vace_strength = 1.0f;  // the VACE blocks' output scale (--vace-strength)
    // [L, N] f32, added to the cross-attention logits of the text tokens: ln(k) for a row that
    // stands for k identical rows (see compact_wan_context), -inf for a filler row; null: none.
    ggml_tensor* context_mask = nullptr;
};

// The text context with its identical all-zero rows (umT5's zeroed padding: up to 511 of
// 512) folded into one row per item whose key weight is ln(count). Cross-attention over n
// copies of a key and value equals attention over one copy with ln(n) added to its logit, so
// the image is the same while the DiT projects and attends to a few rows instead of 512.
struct WanContext {
    std::vector<float> tokens;  // [width, rows, items]
    std::vector<float> mask;    // [rows, items]
    int64_t rows = 0;
};
WanContext compact_wan_context(const std::vector<const std::vector<float>*>& items, int64_t width);

// The main block after which VACE block n runs (n * (layers / vace_layers)).
int64_t wan_vace_block_after(const WanConfig& cfg, int64_t n);

// x [w, h, C * T, N] (channel c of frame t in plane c * T + t; C = in_channels, image-to-video
// DiTs take the mask and image latent channels after the noisy latent's), timesteps [N]
// (sigma * 1000) or [T * N] (one per frame, item-major: Wan 2.2 TI2V holds given frames at
// timestep 0), context [text_width, L, N], cos/sin [1, pairs, 1, tokens] -> the flow
// velocity [w, h, out_channels * T, N].
ggml_tensor* build_wan(nn::Ctx& c, const WanConfig& cfg, ggml_tensor* x, int64_t frames,
                       ggml_tensor* timesteps, ggml_tensor* context, ggml_tensor* cos,
                       ggml_tensor* sin, const WanExtras& extras = {});

// One block alone (benchmarks): x [width, tokens, N], e0 [width, 6, N] (the time
// projection), context [width, L, N] (after text_embedding).
// image: [width, tokens, N] image tokens after img_emb, or null.
ggml_tensor* build_wan_block(nn::Ctx& c, const WanConfig& cfg, int64_t index, ggml_tensor* x,
                             ggml_tensor* e0, ggml_tensor* context, ggml_tensor* cos,
                             ggml_tensor* sin, ggml_tensor* image = nullptr,
                             ggml_tensor* context_mask = nullptr);

}  // namespace ggdiff::models
