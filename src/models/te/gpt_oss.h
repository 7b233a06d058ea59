// OpenAI's GPT-OSS (gpt-oss-20b) language model as a text encoder (Lens reads its hidden
// states). As stable-diffusion.cpp (38a51f81) runs it:
// - attention: 64 query and 8 key/value heads of 64 (grouped: query head h reads key/value
//   head h / 8), q/k/v and output biases, a learned "sink" logit per head that takes part in
//   the softmax without a value, causal; the even layers (0, 2, ...) see only the last 128
//   tokens (the query itself included), the odd ones every earlier token;
// - RoPE on the two halves of each head with YaRN scaling (theta 150000, factor 32 over an
//   original context of 4096, beta fast 32 / slow 1: ggml's rope_ext with ext_factor 1);
// - the MLP is a mixture of experts: a router (linear with bias) picks the top 4 of its
//   experts per token, their softmaxed router logits weigh the experts' outputs; each expert
//   is gate/up linears with biases, swiglu with OpenAI's clamp (gate clamped to <= 7, up to
//   [-7, 7], gate * sigmoid(1.702 gate) * (up + 1)), then a down linear with bias;
// - RMSNorm eps 1e-5 before attention and before the MLP.
//
// Names: llama.cpp's GGUF names (what users download, e.g. unsloth's gpt-oss-20b-*.gguf) are
// renamed to HF-style ones when the file is read (io/name_map_llama.cpp); the experts keep
// llama.cpp's split layout: "<base>layers.N.mlp.experts.{gate,up,down}_proj.{weight,bias}"
// (ggml [in, out, experts] / [out, experts]), "<base>layers.N.mlp.router.{weight,bias}",
// "<base>layers.N.self_attn.sinks". The norm before the MLP is post_attention_layernorm (or
// the reference's own post_attention_norm). Hugging Face's original safetensors (MXFP4 blocks
// in a fused gate_up_proj) are refused with a message saying so.
#pragma once

#include <string>
#include <vector>

#include "core/host_tensor.h"
#include "core/status.h"
#include "io/tensor_index.h"
#include "nn/weights.h"

namespace ggdiff::models {

struct GptOssConfig {
    std::string base;  // prefix of embed_tokens / layers, e.g. "text_encoders.llm.model."
    int64_t vocab = 0;
    int64_t hidden = 0;
    int64_t layers = 0;
    int64_t heads = 64;
    int64_t kv_heads = 8;
    int64_t head_dim = 64;
    int64_t experts = 32;
    int64_t experts_per_token = 4;
    int64_t intermediate = 0;  // each expert's
    float eps = 1e-5f;
    float rope_theta = 150000.0f;
    float rope_factor = 32.0f;  // YaRN
    int rope_original_context = 4096;
    int sliding_window = 128;  // on the even layers
    // The name of the norm before the MLP under "<base>layers.N.".
    std::string mlp_norm = "post_attention_layernorm.weight";
};

// Whether the LLM under `role_prefix` looks like GPT-OSS (attention sinks or a MoE router).
bool is_gpt_oss(const TensorIndex& index, const std::string& role_prefix);

// Finds the model under `role_prefix` ("text_encoders.llm.") and reads its sizes; the error
// names the first missing or mis-shaped tensor.
Result<GptOssConfig> detect_gpt_oss(const TensorIndex& index, const std::string& role_prefix);

// Embedding rows of `ids` read from the checkpoint: [hidden, ids.size(), 1] as f32.
Result<HostTensor> gpt_oss_embed(const TensorIndex& index, const GptOssConfig& cfg,
                                 const std::vector<int>& ids);

// The additive attention masks for T tokens ([T, T] f32, key index fastest): causal, and
// causal within the sliding window.
HostTensor gpt_oss_causal_mask(int64_t tokens);
HostTensor gpt_oss_window_mask(int64_t tokens, int window);

// embeds [hidden, T, 1] -> the outputs of `out_layers` (0-based, no final norm; layers after
// the last one are not run) concatenated on the feature axis ([hidden * k, T, 1]); empty
// `out_layers`: every layer, then the final norm. positions [T] i32; causal / window: the
// masks above.
ggml_tensor* build_gpt_oss(nn::Ctx& c, const GptOssConfig& cfg, ggml_tensor* embeds,
                           ggml_tensor* positions, ggml_tensor* causal, ggml_tensor* window,
                           const std::vector<int>& out_layers);

}  // namespace ggdiff::models
