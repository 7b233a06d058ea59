// The Anima DiT (CircleStone Labs' Anima: NVIDIA Cosmos-Predict2's MiniTrainDIT with an "LLM
// adapter"). Two graphs:
//
// The LLM adapter ("llm_adapter.*") turns the text into the DiT's context: T5 token ids are
// embedded (a 32128-row table), then 6 blocks of
//   x += self_attn(RMSNorm(x))              (RoPE over the T5 positions)
//   x += cross_attn(RMSNorm(x), qwen)       (q at the T5 positions, k at the Qwen3 positions)
//   x += mlp(RMSNorm(x))                    (linear, GELU, linear, with biases)
// attend to the Qwen3 hidden states; out_proj and an RMSNorm end it. Attention has 16 heads
// of 64 with per-head q/k RMSNorm, RoPE on the two halves of each head (theta 10000).
//
// The DiT: the latent plus a zero "padding mask" channel in 2x2 patches ("x_embedder.proj.1",
// no bias); the timestep (sigma) as 2048 sinusoidal features gives temb = linear_2(SiLU(
// linear_1(.))) (3 x width) and an RMSNorm of the features ("t_embedding_norm") that the
// AdaLN-LoRA modulations start from. Each block is
//   x += gate * self_attn(LN(x) * (1 + scale) + shift)      (3-axis RoPE: frame, row, column)
//   x += gate * cross_attn(LN(x) * (1 + scale) + shift, context)
//   x += gate * mlp(LN(x) * (1 + scale) + shift)            (GELU, 4x, no biases)
// with (shift, scale, gate) = linear_2(linear_1(SiLU(t_norm))) + temb per block and stream.
// The image RoPE gives axes 44/42/42 of the 128-wide heads; rows and columns use NTK-scaled
// thetas (10000 * 4^(42/40)), as the reference engine does. The final layer modulates the
// same way (shift, scale from the first 2 x width of temb) and maps to 2x2 patches with the
// channel fastest. The output is the flow velocity.
//
// Sizes come from the weights: width (x_embedder), latent channels (final_layer.linear),
// heads (q_norm: head size), text width (cross_attn.k_proj), MLP width, depth (blocks.N),
// the adapter's width, depth and head size.
#pragma once

#include <string>
#include <vector>

#include "core/host_tensor.h"
#include "core/status.h"
#include "io/tensor_index.h"
#include "nn/weights.h"

namespace ggdiff::models {

struct AnimaConfig {
    std::string prefix = "model.diffusion_model.net.";
    int64_t width = 2048;
    int64_t heads = 16;
    int64_t head_dim = 128;
    int64_t mlp = 8192;
    int64_t adaln_lora = 256;
    int64_t text_width = 1024;  // the context the blocks' cross attention reads
    int64_t latent_channels = 16;
    int64_t layers = 28;
    int patch = 2;
    std::vector<int> axes_dim = {44, 42, 42};
    float theta = 10000.0f;
    float spatial_ntk = 4.0f;  // rows and columns: theta * ntk^(d / (d - 2))
    // The LLM adapter.
    int64_t adapter_width = 1024;
    int64_t adapter_source = 1024;  // the Qwen3 hidden size it reads
    int64_t adapter_heads = 16;
    int64_t adapter_head_dim = 64;
    int64_t adapter_layers = 6;
    int64_t adapter_vocab = 32128;
    int64_t context_tokens = 512;  // the adapter's output is padded / cut to this many
};

// True for an Anima DiT under `prefix` (llm_adapter.blocks.0.cross_attn.q_proj is its mark).
bool is_anima(const TensorIndex& index, const std::string& prefix = "model.diffusion_model.net.");
Result<AnimaConfig> detect_anima(const TensorIndex& index,
                                 const std::string& prefix = "model.diffusion_model.net.");

// RoPE angles, host side: cos and sin [pairs, 1, tokens, 1] (a head's pair i turns (x[i],
// x[i + pairs]) by the angle).
struct AnimaRope {
    HostTensor cos, sin;
};
// The image tokens of a latent w x h (padded to the patch), row-major.
AnimaRope anima_image_rope(const AnimaConfig& cfg, int64_t latent_w, int64_t latent_h);
// Positions 0 .. tokens - 1 for the adapter's heads.
AnimaRope anima_adapter_rope(const AnimaConfig& cfg, int64_t tokens);

// The adapter: t5_ids [T] (int32), qwen [adapter_source, L, 1] -> [adapter_width, T, 1]
// (before the token weights and the padding to context_tokens).
ggml_tensor* build_anima_adapter(nn::Ctx& c, const AnimaConfig& cfg, ggml_tensor* t5_ids,
                                 ggml_tensor* qwen, ggml_tensor* target_cos,
                                 ggml_tensor* target_sin, ggml_tensor* source_cos,
                                 ggml_tensor* source_sin);

// x [w, h, C, N] latent, sigmas [N], context [text_width, T, N], image RoPE ->
// flow velocity [w, h, C, N].
ggml_tensor* build_anima(nn::Ctx& c, const AnimaConfig& cfg, ggml_tensor* x, ggml_tensor* sigmas,
                         ggml_tensor* context, ggml_tensor* cos, ggml_tensor* sin);

// One DiT block alone (bench): x [width, T, N], t_norm [width, N], temb [3 width, N].
ggml_tensor* build_anima_block(nn::Ctx& c, const AnimaConfig& cfg, int64_t index, ggml_tensor* x,
                               ggml_tensor* context, ggml_tensor* t_norm, ggml_tensor* temb,
                               ggml_tensor* cos, ggml_tensor* sin);

}  // namespace ggdiff::models
