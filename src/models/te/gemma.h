// Google's Gemma causal language models as text encoders: Gemma 2 (PiD's Gemma 2 2B) and
// Gemma 3 (LTX-2's Gemma 3 12B); the architecture choices that differ between Gemma
// generations are switches of GemmaConfig, one graph for both:
//   - the token embedding is multiplied by sqrt(hidden) before the first layer;
//   - every RMSNorm scales by (1 + weight);
//   - each layer has pre- and post-norms around attention and around the MLP
//     (input_layernorm / post_attention_layernorm, pre_feedforward_layernorm /
//     post_feedforward_layernorm in Hugging Face's Gemma 2 names);
//   - the MLP is down(gelu_tanh(gate(x)) * up(x));
//   - grouped-query attention with head size 256 on Gemma 2 2B (8 query, 4 key/value heads),
//     RoPE on the two halves of each head (theta 10000);
//   - optional per-head q/k RMSNorm (Gemma 3), per-layer RoPE (Gemma 3: local theta on the
//     window layers, linear scaling on the global ones), attention-logit soft-capping and a
//     sliding window on some layers (Gemma 2's config has both; stable-diffusion.cpp (38a51f81)
//     runs Gemma 2 without either, and so does the PiD recipe: soft_cap 0, window 0).
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
    // Gemma 3: the sliding-window layers rotate with their own theta (0: rope_theta), the
    // global ones with positions divided by rope_scale (linear RoPE scaling; 12B: 8).
    float rope_theta_local = 0.0f;
    float rope_scale = 1.0f;
    // Hugging Face files store RMSNorm weights w applied as (1 + w); llama.cpp's GGUF conversion
    // stores 1 + w, applied as it is (false).
    bool norm_adds_one = true;
    bool qk_norm = false;  // Gemma 3: per-head RMSNorm of q and k
    // Causal attention on ggml's own products and softmax (nn::attention's ggml_only), not
    // the CPU kernels: LTX-2's text path, whose outputs follow the reference only that way.
    bool ggml_attention = false;
    // Attention logits soft-capped as cap * tanh(logits / cap); 0: none.
    float attn_soft_cap = 0.0f;
    // Layers i with i % sliding_period == sliding_period - 1 attend globally, the others to
    // the last `sliding_window` keys only; window 0: every layer attends globally.
    int64_t sliding_window = 0;
    int sliding_period = 2;
    // Soft-capping or a window need explicit attention masks (GemmaMasks).
    bool needs_masks() const { return attn_soft_cap > 0.0f || sliding_window > 0; }
    // Whether a run of `tokens` tokens needs them: a window no run reaches changes nothing.
    bool needs_masks(int64_t tokens) const {
        return attn_soft_cap > 0.0f || (sliding_window > 0 && tokens > sliding_window);
    }
    // Whether layer i uses the sliding window.
    bool sliding(int64_t layer) const {
        return sliding_window > 0 && layer % sliding_period != sliding_period - 1;
    }
};

// Gemma 2 under `role_prefix` (e.g. "text_encoders.llm."): sizes from the weights, the head
// size 256 (Gemma 2 2B's, which stable-diffusion.cpp fixes), no soft-capping and no sliding
// window (as the reference runs it). The error names the first missing or mis-shaped tensor.
Result<GemmaConfig> detect_gemma2(const TensorIndex& index, const std::string& role_prefix);

// Gemma 3 under `role_prefix`, as stable-diffusion.cpp (38a51f81) runs Gemma 3 12B for LTX-2:
// sizes from the weights, heads of 256 with q/k RMSNorm, every sixth layer (i % 6 == 5)
// global (RoPE theta 1e6, linear scaling 8), the others a 1024-token sliding window (theta
// 1e4), no soft-capping. Hugging Face names, or llama.cpp GGUF names (renamed on load; their
// norm weights already hold the +1).
Result<GemmaConfig> detect_gemma3(const TensorIndex& index, const std::string& role_prefix);

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
// reference's attention mask does. `masks` must be given when cfg.needs_masks(T).
// `states`, when given, receives every hidden state as Hugging Face's output_hidden_states
// lists them: the scaled embeddings, the output of each layer but the last, and the final
// normed output (layers + 1 tensors [hidden, T, 1]; the last is the return value).
ggml_tensor* build_gemma(nn::Ctx& c, const GemmaConfig& cfg, ggml_tensor* embeds,
                         ggml_tensor* positions, int64_t padding = 0, const GemmaMasks& masks = {},
                         std::vector<ggml_tensor*>* states = nullptr);

}  // namespace ggdiff::models
