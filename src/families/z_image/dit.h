// The Z-Image DiT (Z-Image Turbo and its base; the Lumina-2 "NextDiT" lineage): a single
// stream of joint transformer blocks over text and image tokens. The caption features pass
// an RMSNorm and a linear ("cap_embedder"), the 2x2 latent patches a linear ("x_embedder");
// each stream is padded to a multiple of 32 tokens with a learned pad token, refined on its
// own ("context_refiner.N" without modulation, "noise_refiner.N" with it), then text and
// image are concatenated and run through the main "layers.N". Every block is
//   x += tanh(gate) * RMSNorm(attn(RMSNorm(x) * (1 + scale)))
//   x += tanh(gate) * RMSNorm(ffn(RMSNorm(x) * (1 + scale)))
// with fused qkv, per-head q/k RMSNorm, 3-axis interleaved RoPE (theta 256, axes 32/48/48
// over caption index, row, column) and a SwiGLU feed-forward; the four modulation vectors
// are a linear of the timestep embedding (no SiLU). The final layer is a plain LayerNorm
// scaled by (1 + linear(silu(t))) and a linear back to patches.
//
// The model's time runs the other way from the sampler's: it is called at
// t = (1 - sigma) * 1000 and predicts clean minus noise, so the graph returns the negated
// output (the flow velocity the samplers expect).
//
// Sizes come from the weights: width (x_embedder), caption width (cap_embedder.1), head
// size (q_norm), heads and key/value heads (qkv rows), FFN width (w1), timestep widths
// (t_embedder.mlp.*), the modulation input (adaLN_modulation.0), depths (layers.N,
// noise_refiner.N, context_refiner.N).
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "io/tensor_index.h"
#include "nn/dit.h"
#include "nn/weights.h"

namespace ggdiff::models {

struct ZImageConfig {
    std::string prefix = "model.diffusion_model.";
    int64_t width = 3840;
    int64_t head_dim = 128;
    int64_t heads = 30;
    int64_t kv_heads = 30;
    int64_t ffn = 10240;
    int64_t cap_width = 2560;   // caption feature width (the text model's hidden size)
    int64_t t_width = 1024;     // t_embedder.mlp.0 output
    int64_t adaln_width = 256;  // timestep embedding width the blocks modulate from
    int64_t latent_channels = 16;
    int64_t layers = 30;
    int64_t noise_refiners = 2;
    int64_t context_refiners = 2;
    int patch = 2;
    int pad_multiple = 32;  // each stream is padded to a multiple of this many tokens
    std::vector<int> axes_dim = {32, 48, 48};
    float theta = 256.0f;
    float eps = 1e-5f;
};

// True for a Z-Image DiT under the prefix (cap_embedder.0.weight is its mark).
bool is_z_image(const TensorIndex& index, const std::string& prefix = "model.diffusion_model.");
Result<ZImageConfig> detect_z_image(const TensorIndex& index,
                                    const std::string& prefix = "model.diffusion_model.");

// Token counts of one call: caption tokens padded to `text_padded`, the h x w image patches
// padded to `image_padded`.
struct ZImageTokens {
    int64_t text = 0, text_padded = 0;
    int64_t grid_w = 0, grid_h = 0;  // patches per row / column (the latent padded to the patch)
    int64_t image = 0, image_padded = 0;
    int64_t total() const { return text_padded + image_padded; }
};
ZImageTokens z_image_tokens(const ZImageConfig& cfg, int64_t latent_w, int64_t latent_h,
                            int64_t text_tokens);

// Position ids of every token, 3 per token (caption index, row, column): caption token i
// (padding included) is (i + 1, 0, 0); image patch (y, x) is (text_padded + 1, y, x); image
// padding is (0, 0, 0). Text first, then the image.
std::vector<float> z_image_position_ids(const ZImageTokens& tokens);

// The RoPE angles of those ids, host side: cos and sin [pairs][tokens] (pair j of axis a
// turns at theta^(-2j / axes_dim[a])). With `wrap` (seamless tiling) the image patches'
// rows / columns wrap around on the patch grid (nn::rope_angle); text and padding never do.
struct ZImageRope {
    std::vector<float> cos, sin;
    int64_t pairs = 0, tokens = 0;
};
ZImageRope z_image_rope(const ZImageConfig& cfg, const ZImageTokens& tokens,
                        nn::RopeWrap wrap = {});

// x [w, h, C, N] latent, timesteps [N] in the model's own time ((1 - sigma) * 1000),
// context [cap_width, L, N], cos/sin [1, pairs, 1, tokens] -> flow velocity [w, h, C, N].
ggml_tensor* build_z_image(nn::Ctx& c, const ZImageConfig& cfg, ggml_tensor* x,
                           ggml_tensor* timesteps, ggml_tensor* context, ggml_tensor* cos,
                           ggml_tensor* sin);

// One main block alone (bench and tests): x [width, T, N], temb [adaln_width, N].
ggml_tensor* build_z_image_block(nn::Ctx& c, const ZImageConfig& cfg, const std::string& name,
                                 ggml_tensor* x, ggml_tensor* temb, ggml_tensor* cos,
                                 ggml_tensor* sin);

}  // namespace ggdiff::models
