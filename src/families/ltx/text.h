// LTX-2's text conditioning after the language model, as stable-diffusion.cpp (38a51f81,
// LTXAVEmbedder) computes it:
//   1. Gemma 3 (models/te/gemma.h) runs the prompt; all its hidden states are kept: the scaled
//      embeddings, each layer's output and the final normed output (49 states of 3840 for
//      Gemma 3 12B);
//   2. each state is normalized: LTX-2.3 (two "aggregate" projections) divides every token's
//      state by its RMS over the features (eps 1e-6); LTX-2.0 (one projection) maps each state
//      over all tokens and features to (x - mean) * 8 / (max - min + 1e-6);
//   3. the states are interleaved per feature (feature f = h * states + s: a token's 49
//      values of feature 0 first) and projected:
//      LTX-2.3: video_aggregate_embed(x * sqrt(video / hidden)) and
//               audio_aggregate_embed(x * sqrt(audio / hidden)), with biases, concatenated
//               ([4096 + 2048, T]: the DiT's video and audio text contexts);
//      LTX-2.0: projection(x) without bias ([3840, T]).
// The projections are "text_embedding_projection.*" in the embeddings-connectors file; their
// sizes come from the weights and must take hidden * (layers + 1) features.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/host_tensor.h"
#include "core/status.h"
#include "io/tensor_index.h"
#include "models/te/gemma.h"
#include "nn/weights.h"
#include "runtime/module_runner.h"

namespace ggdiff::models {

struct LtxTextConfig {
    GemmaConfig llm;
    std::string proj = "text_embedding_projection.";
    bool dual = true;            // LTX-2.3: video and audio aggregate embeds
    int64_t states = 49;         // llm.layers + 1
    int64_t video_width = 4096;  // dual: video_aggregate_embed's output; else projection's
    int64_t audio_width = 2048;  // dual only
    int64_t features() const { return llm.hidden * states; }
    int64_t out_width() const { return dual ? video_width + audio_width : video_width; }
};

// Gemma 3 under `llm_prefix` and the projection under "text_embedding_projection.": the error
// names the missing or mis-shaped tensor.
Result<LtxTextConfig> detect_ltx_text(const TensorIndex& index, const std::string& llm_prefix);

// `states` (cfg.states tensors [hidden, T], build_gemma's order) normalized and interleaved:
// [hidden * states, T] with feature f = h * states + s.
HostTensor ltx_text_features(const LtxTextConfig& cfg, const std::vector<HostTensor>& states);

// features [hidden * states, T, 1] -> the DiT's text context [out_width, T, 1].
ggml_tensor* build_ltx_text_projection(nn::Ctx& c, const LtxTextConfig& cfg, ggml_tensor* features);

// The whole text path for one prompt's tokens (<bos> first; `weights` per token, A1111
// emphasis): Gemma 3 over the real tokens only at positions 0..n-1 (the reference's left
// padding to 1024 tokens changes nothing for them: padding keys are hidden and RoPE is relative),
// with the sliding-window masks once n exceeds the window; the emphasis scales each token's raw
// states (LTX-2.3's per-token RMS normalization then cancels it, as in the reference); the
// states normalized and projected. `llm` and `proj`: prepared by ltx_prepare_text.
// -> [out_width, n, 1].
// Declares the two graphs' weights on their runners (prepare) with an 8-token run.
Status ltx_prepare_text(ModuleRunner& llm, ModuleRunner& proj, const LtxTextConfig& cfg);

Result<HostTensor> ltx_encode_tokens(ModuleRunner& llm, ModuleRunner& proj,
                                     const TensorIndex& index, const LtxTextConfig& cfg,
                                     const std::vector<int>& ids,
                                     const std::vector<float>& weights);

}  // namespace ggdiff::models
