// CLIP text transformer (OpenAI ViT-L/14 for SD1 and SDXL, OpenCLIP ViT-H/14 for SD2,
// OpenCLIP ViT-bigG/14 for SDXL) in the HF layout under a prefix such as
// "cond_stage_model.transformer.text_model.".
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "io/tensor_index.h"
#include "nn/weights.h"

namespace ggdiff::models {

struct ClipTextConfig {
    std::string prefix;  // up to and including "text_model."
    int64_t vocab = 49408;
    int64_t positions = 77;
    int64_t width = 768;
    int64_t layers = 12;
    int64_t heads = 12;
    int64_t intermediate = 3072;
    bool quick_gelu = true;  // OpenAI CLIP; OpenCLIP uses exact GELU
    // The pooled output's projection (bigG): none, open_clip's "text_projection" (square)
    // or HF's "text_projection.weight" ([proj, width]); both are applied as a linear weight
    // (x @ W^T), as the reference engine does (see build_clip). Both live next to
    // "text_model." (see projection_name).
    enum class Projection { None, OpenClip, Hf } projection = Projection::None;
    int64_t projection_dim = 0;

    // The projection tensor's name ("" without one).
    std::string projection_name() const;
};

// Reads the architecture from the weights; the error names the first missing tensor.
Result<ClipTextConfig> detect_clip_text(const TensorIndex& index, const std::string& prefix);

// tokens: int32 [positions, N] -> hidden states [width, positions, N] of the layer
// clip_skip counts back from the end (1 = last layer, 2 = penultimate, ...), after the
// final layer norm unless final_norm is false (SDXL takes the raw penultimate states).
ggml_tensor* build_clip_text(nn::Ctx& c, const ClipTextConfig& cfg, ggml_tensor* tokens,
                             int clip_skip, bool final_norm = true);

// Both outputs of one pass: the hidden states as build_clip_text gives them and, with
// pooled_index >= 0 (tokens [positions, 1]), the pooled output [projection_dim or width]:
// every layer, the final layer norm, the state at token `pooled_index` (the first EOS),
// then the projection when the model has one.
struct ClipOutputs {
    ggml_tensor* hidden = nullptr;
    ggml_tensor* pooled = nullptr;
};
// Token vectors that take the place of the token table's rows at some positions (textual
// inversion embeddings, whose ids lie past the vocabulary): `vectors` f32 [width, positions,
// N] holds them there and zeros elsewhere, `keep` f32 [1, positions, N] is 0 there and 1
// elsewhere (the ids there must still be valid rows, e.g. 0).
struct ClipTokenOverride {
    ggml_tensor* vectors = nullptr;
    ggml_tensor* keep = nullptr;
};
ClipOutputs build_clip(nn::Ctx& c, const ClipTextConfig& cfg, ggml_tensor* tokens, int clip_skip,
                       bool final_norm, int64_t pooled_index,
                       const ClipTokenOverride* custom = nullptr);

// Names of the encoder layers' prefixes, in order (for layer split).
std::vector<std::string> clip_layer_prefixes(const ClipTextConfig& cfg);

// One CLIP encoder layer (text and vision towers alike) in the HF names under `prefix`
// ("....encoder.layers.N."): pre-LN self-attention with biased q/k/v/out projections, then a
// pre-LN MLP (fc1, GELU or quick GELU, fc2), each added to x [width, tokens, N].
struct ClipLayerShape {
    int64_t width = 768;
    int64_t heads = 12;
    int64_t intermediate = 3072;
    bool quick_gelu = true;
    bool causal = true;  // the text towers' causal mask; the vision towers see every token
};
ggml_tensor* clip_encoder_layer(nn::Ctx& c, const ClipLayerShape& s, ggml_tensor* x,
                                const std::string& prefix);

}  // namespace ggdiff::models
