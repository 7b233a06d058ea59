// The Boogu Image DiT (text-to-image and edit; a Lumina-2 lineage network with double-stream
// layers), as stable-diffusion.cpp (38a51f81) runs it. The caption features pass an RMSNorm
// and a linear ("time_caption_embed.caption_embedder"), the 2x2 latent patches a linear
// ("x_embedder"), each reference latent its own ("ref_image_patch_embedder") plus a learned
// index embedding ("image_index_embedding", row min(i, 4)). Then:
// - refiners, each stream on its own: "context_refiner.N" (text, no modulation),
//   "noise_refiner.N" (image), "ref_image_refiner.N" (the references);
// - "double_stream_layers.N": the references and the image (one stream) and the text, each
//   modulated by its own RMSNorm-zero norms, attend jointly through per-stream q/k/v
//   ("img_instruct_attn.processor.{img,instruct}_to_{q,k,v}", per-stream output linears, then
//   one shared "to_out.0"), the image stream also attends to itself ("img_self_attn");
//   each stream then has its own SwiGLU feed-forward;
// - "single_stream_layers.N" over text + references + image;
// - "norm_out": a plain LayerNorm scaled by (1 + linear(silu(t))) and a linear back to patches.
// Every single-stream and refiner block is
//   x += tanh(gate) * RMSNorm(attn(RMSNorm(x) * (1 + scale)))
//   x += tanh(gate) * RMSNorm(ffn(RMSNorm(x) * (1 + scale)))
// with the four modulation vectors from linear(silu(t)) ("norm1.linear"); grouped-query
// attention with per-head q/k RMSNorm and 3-axis interleaved RoPE (theta 10000): text token i
// at (i, i, i), each reference and then the image at (shift, row, column), the shift starting
// after the text and growing by max(rows, columns) of every reference.
//
// The model's time runs the other way from the sampler's: it is called at 1 - sigma (scaled by
// 1000 in its sinusoidal embedding) and predicts clean minus noise, so the graph returns the
// negated output (the flow velocity the samplers expect).
//
// Sizes come from the weights: width (x_embedder), caption width (caption_embedder.1), head
// size (attn.norm_q), key/value heads (to_k rows), FFN width (feed_forward.linear_1), the
// timestep width (timestep_embedder.linear_1), the depths of every block kind.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "io/tensor_index.h"
#include "nn/weights.h"

namespace ggdiff::models {

struct BooguConfig {
    std::string prefix = "model.diffusion_model.";
    int64_t width = 3360;
    int64_t head_dim = 120;
    int64_t heads = 28;
    int64_t kv_heads = 7;
    int64_t ffn = 13568;
    int64_t cap_width = 4096;  // caption feature width (the text model's hidden size)
    int64_t t_width = 1024;    // timestep embedding width the blocks modulate from
    int64_t latent_channels = 16;
    int64_t single_layers = 32;
    int64_t double_layers = 8;
    int64_t noise_refiners = 2;
    int64_t context_refiners = 2;
    int64_t ref_refiners = 2;
    int patch = 2;
    std::vector<int> axes_dim = {40, 40, 40};
    float theta = 10000.0f;
    float eps = 1e-5f;
    static constexpr int kIndexEmbeddings = 5;  // rows of image_index_embedding
};

// True for a Boogu Image DiT under the prefix (the double-stream layers' instruct attention).
bool is_boogu(const TensorIndex& index, const std::string& prefix = "model.diffusion_model.");
Result<BooguConfig> detect_boogu(const TensorIndex& index,
                                 const std::string& prefix = "model.diffusion_model.");

// The sequence of one call: `text` caption tokens, then each reference's patch grid, then the
// image's (grids of the latents padded to whole patches).
struct BooguGrid {
    int64_t w = 0, h = 0;  // patches per row / column
    int64_t tokens() const { return w * h; }
};
struct BooguTokens {
    int64_t text = 0;
    std::vector<BooguGrid> refs;
    BooguGrid image;
    int64_t ref_tokens() const;
    int64_t total() const { return text + ref_tokens() + image.tokens(); }
};
BooguTokens boogu_tokens(const BooguConfig& cfg, int64_t latent_w, int64_t latent_h,
                         int64_t text_tokens, const std::vector<std::pair<int64_t, int64_t>>& refs);

// Position ids, 3 per token, in sequence order (see the header comment).
std::vector<float> boogu_position_ids(const BooguTokens& tokens);

// x [w, h, C, 1] latent, timesteps [1] (the sampler's, 1000 * sigma), context [cap_width, L, 1],
// refs: reference latents [w_i, h_i, C, 1] (may be empty), cos/sin [1, pairs, 1, tokens] -> flow
// velocity.
ggml_tensor* build_boogu(nn::Ctx& c, const BooguConfig& cfg, ggml_tensor* x, ggml_tensor* timesteps,
                         ggml_tensor* context, const std::vector<ggml_tensor*>& refs,
                         ggml_tensor* cos, ggml_tensor* sin);

// One single-stream layer alone (bench): x [width, T, 1], temb [t_width, 1].
ggml_tensor* build_boogu_single_layer(nn::Ctx& c, const BooguConfig& cfg, const std::string& name,
                                      ggml_tensor* x, ggml_tensor* temb, ggml_tensor* cos,
                                      ggml_tensor* sin);

}  // namespace ggdiff::models
