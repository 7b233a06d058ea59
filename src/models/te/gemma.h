// Google's Gemma causal language models as text encoders. Gemma 2 (PiD's Gemma 2 2B) is the
// first; the architecture choices that differ between Gemma generations are switches of
// GemmaConfig so that Gemma 3 (LTX-2's encoder) can reuse the graph:
//   - the token embedding is multiplied by sqrt(hidden) before the first layer;
//   - every RMSNorm scales by (1 + weight);
//   - each layer has pre- and post-norms around attention and around the MLP
//     (input_layernorm / post_attention_layernorm, pre_feedforward_layernorm /
//     post_feedforward_layernorm in Hugging Face's Gemma 2 names);
//   - the MLP is down(gelu_tanh(gate(x)) * up(x));
//   - grouped-query attention with head size 256 on Gemma 2 2B (8 query, 4 key/value heads),
//     RoPE on the two halves of each head (theta 10000);
//   - optional per-head q/k RMSNorm (Gemma 3), attention-logit soft-capping and a sliding
//     window on some layers (Gemma 2's config has both; stable-diffusion.cpp (38a51f81) runs
//     Gemma 2 without either, and so does the PiD recipe: soft_cap 0, window 0).
// Hugging Face names under any base: "<base>embed_tokens.weight", "<base>layers.N.
// {input_layernorm, post_attention_layernorm, pre_feedforward_layernorm,
// post_feedforward_layernorm, self_attn.{q,k,v,o}_proj, mlp.{gate,up,down}_proj}",
// "<base>norm.weight". Sizes come from the weights; the head size is a config value (the
// weights cannot tell 8 heads of 256 from 16 of 128).
#pragma once

#include <string>
#include <vector>

#include "core/host_tensor.h"
#include "core/status.h"
#include "io/tensor_index.h"
#include "nn/weights.h"

namespace ggdiff::models {

struct GemmaConfig {
    std::string base;  // prefix of embed_tokens / layers / norm ("text_encoders.llm.model.")
    int64_t vocab = 0;
    int64_t hidden = 0;
    int64_t layers = 0;
    int64_t heads = 0;
    int64_t kv_heads = 0;
    int64_t head_dim = 256;
    int64_t intermediate = 0;
    float eps = 1e-6f;
    float rope_theta = 10000.0f;
    bool qk_norm = false;  // Gemma 3: per-head RMSNorm of q and k
    // Attention logits soft-capped as cap * tanh(logits / cap); 0: none.
    float attn_soft_cap = 0.0f;
    // Layers i with i % sliding_period == sliding_period - 1 attend globally, the others to
    // the last `sliding_window` keys only; window 0: every layer attends globally.
    int64_t sliding_window = 0;
    int sliding_period = 2;
    // Soft-capping or a window need explicit attention masks (GemmaMasks).
    bool needs_masks() const { return attn_soft_cap > 0.0f || sliding_window > 0; }
    // Whether layer i uses the sliding window.
    bool sliding(int64_t layer) const {
        return sliding_window > 0 && layer % sliding_period != sliding_period - 1;
    }
};

// Gemma 2 under `role_prefix` (e.g. "text_encoders.llm."): sizes from the weights, the head
// size 256 (Gemma 2 2B's, which stable-diffusion.cpp fixes), no soft-capping and no sliding
// window (as the reference runs it). The error names the first missing or mis-shaped tensor.
Result<GemmaConfig> detect_gemma2(const TensorIndex& index, const std::string& role_prefix);

// Embedding rows of `ids` read from the checkpoint, times sqrt(hidden): [hidden, ids.size()].
Result<HostTensor> gemma_embed(const TensorIndex& index, const GemmaConfig& cfg,
                               const std::vector<int>& ids);

// The additive attention mask [T, T] (0 seen, -inf hidden) of T tokens whose last `padding`
// are padding: query i sees keys j <= i, within `window` of it when window > 0, and no padding
// key; a padding query sees every real key.
HostTensor gemma_attention_mask(int64_t tokens, int64_t padding, int64_t window);

// The masks a config with needs_masks() attends with (graph inputs made from
// gemma_attention_mask): `global` for every layer, `window` for the sliding ones.
struct GemmaMasks {
    ggml_tensor* global = nullptr;
    ggml_tensor* window = nullptr;
};

// embeds [hidden, T, 1] (already scaled) -> the final normed hidden states [hidden, T, 1].
// Causal attention over positions 0..T-1 ([T] ids). The last `padding` tokens are padding:
// hidden as keys from every query (a padding query sees all the real tokens), as the
// reference's attention mask does. `masks` must be given when cfg.needs_masks().
ggml_tensor* build_gemma(nn::Ctx& c, const GemmaConfig& cfg, ggml_tensor* embeds,
                         ggml_tensor* positions, int64_t padding = 0, const GemmaMasks& masks = {});

}  // namespace ggdiff::models
