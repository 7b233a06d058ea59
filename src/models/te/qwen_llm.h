// The Qwen-family causal language model as a text encoder: Qwen2 / Qwen2.5-VL's text part
// (q/k/v biases) and Qwen3 (RMSNorm on each head's q and k, no biases) are the same graph
// with different switches, all read from the weights (HF layout "<base>embed_tokens.weight",
// "<base>layers.N.{input_layernorm,self_attn.{q,k,v,o}_proj,post_attention_layernorm,
// mlp.{gate,up,down}_proj}", "<base>norm.weight").
//
// Token embeddings are looked up on the host straight from the checkpoint (only the rows a
// prompt uses are read), so the 150k-row table never has to be loaded on a device.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "core/host_tensor.h"
#include "core/status.h"
#include "io/tensor_index.h"
#include "nn/weights.h"

namespace ggdiff::models {

struct QwenLlmConfig {
    std::string base;  // prefix of embed_tokens / layers / norm, e.g. "text_encoders.llm.model."
    int64_t vocab = 0;
    int64_t hidden = 0;
    int64_t layers = 0;
    int64_t heads = 0;
    int64_t kv_heads = 0;
    int64_t head_dim = 128;
    int64_t intermediate = 0;
    bool qkv_bias = true;  // Qwen2 / Qwen2.5
    bool qk_norm = false;  // Qwen3
    float rope_theta = 1000000.0f;
    float eps = 1e-6f;
    // RoPE on adjacent pairs (ggml's "normal" mode) instead of the two halves of each head:
    // llama.cpp's GGUF files of llama-type models (no biases, no q/k norms: Mistral) store
    // q/k rows permuted for it. Hugging Face files keep the halves.
    bool rope_interleaved = false;
    // Qwen3-VL's interleaved multimodal RoPE (ggml's IMROPE) over these many rotation pairs
    // per position stream (time, row, column, unused; HiDream-O1: 24, 20, 20, 0): positions are
    // then four streams of T ids each. All zero: plain RoPE on one stream of T ids.
    std::array<int, 4> mrope_sections = {0, 0, 0, 0};
    bool multimodal_rope() const {
        return mrope_sections[0] + mrope_sections[1] + mrope_sections[2] > 0;
    }
};

// Finds the model under `role_prefix` (e.g. "text_encoders.llm.") and reads its sizes; the
// error names the first missing or mis-shaped tensor.
Result<QwenLlmConfig> detect_qwen_llm(const TensorIndex& index, const std::string& role_prefix);

// The same graph for Mistral Small 3.1 / 3.2 (FLUX.2 dev's text encoder; llama-type: no
// biases, no q/k norms, head size 128, RoPE theta 1e9, RMSNorm eps 1e-5) under `role_prefix`:
// Hugging Face names with any base ("model.", "language_model.model.", "model.language_model.";
// a vision tower beside it is ignored) or llama.cpp GGUF names. The final norm may be missing
// (files cut after the layers FLUX.2 reads).
Result<QwenLlmConfig> detect_mistral_llm(const TensorIndex& index, const std::string& role_prefix);

// Embedding rows of `ids` read from the checkpoint: [hidden, ids.size()] as f32.
Result<HostTensor> qwen_llm_embed(const TensorIndex& index, const QwenLlmConfig& cfg,
                                  const std::vector<int>& ids);

// embeds [hidden, T, 1] -> hidden states: after the final norm ([hidden, T, 1]) when
// `out_layers` is empty, else the outputs of those layers (0-based, no final norm; the layers
// after the last one are not run) concatenated on the feature axis ([hidden * k, T, 1]).
// Causal attention, positions 0..T-1 (text-only multimodal RoPE is plain RoPE). The last
// `padding` tokens are padding: hidden as keys from every query (the padding queries see all
// the real tokens), as the reference engines' attention mask does. With `bidirectional_from`
// >= 0 the queries from that token on see every token (HiDream-O1's image tokens) while the
// ones before stay causal. Positions: [T] ids, or [4 T] with cfg.multimodal_rope().
ggml_tensor* build_qwen_llm(nn::Ctx& c, const QwenLlmConfig& cfg, ggml_tensor* embeds,
                            ggml_tensor* positions, const std::vector<int>& out_layers = {},
                            int64_t padding = 0, int64_t bidirectional_from = -1);

}  // namespace ggdiff::models
