// The T5 v1.1 encoder (FLUX's and SD3's T5-XXL, and any smaller T5 of the same layout) in
// the Hugging Face T5EncoderModel layout under a prefix such as "text_encoders.t5xxl.":
// shared.weight, encoder.block.{i}.layer.0.{layer_norm, SelfAttention.{q,k,v,o}},
// encoder.block.{i}.layer.1.{layer_norm, DenseReluDense.{wi_0,wi_1,wo}} (wi for the
// ungated v1.0 FFN), encoder.final_layer_norm. RMSNorm (eps 1e-6) before each sub-layer,
// unscaled attention with a learned relative position bias (block 0's, shared by every
// layer; UMT5 has one per layer), gated tanh-GELU feed-forward.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "io/tensor_index.h"
#include "nn/weights.h"

namespace ggdiff::models {

struct T5Config {
    std::string prefix;  // up to and including the role prefix ("text_encoders.t5xxl.")
    std::string embedding = "shared.weight";  // or "encoder.embed_tokens.weight"
    int64_t vocab = 32128;
    int64_t width = 4096;  // d_model
    int64_t inner = 4096;  // heads * d_kv
    int64_t heads = 64;
    int64_t ff = 10240;
    int64_t layers = 24;
    int64_t buckets = 32;
    int64_t max_distance = 128;
    bool gated = true;            // wi_0 / wi_1 (v1.1) or wi (v1.0)
    bool bias_per_layer = false;  // UMT5
};

// Reads the architecture from the weights; errors name the first missing or odd tensor.
Result<T5Config> detect_t5(const TensorIndex& index, const std::string& prefix);

// tokens int32 [T, N], buckets int32 [T*T] (t5_relative_buckets) -> hidden states
// [width, T, N] after the final norm. key_mask (f32 [T, N] or null): added to every
// self-attention's logits (0 for a token attended to, -inf for a padding token hidden).
ggml_tensor* build_t5(nn::Ctx& c, const T5Config& cfg, ggml_tensor* tokens, ggml_tensor* buckets,
                      ggml_tensor* key_mask = nullptr);

// Bidirectional relative position buckets of a T-token sequence, entry q*T + k for
// query q and key k (as Hugging Face's T5Attention._relative_position_bucket).
std::vector<int32_t> t5_relative_buckets(int64_t tokens, int64_t buckets, int64_t max_distance);

}  // namespace ggdiff::models
