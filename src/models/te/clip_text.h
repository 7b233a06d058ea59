// CLIP text transformer (OpenAI ViT-L/14 for SD1, OpenCLIP ViT-H/14 for SD2) in the
// HF layout under a prefix such as "cond_stage_model.transformer.text_model.".
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
};

// Reads the architecture from the weights; the error names the first missing tensor.
Result<ClipTextConfig> detect_clip_text(const TensorIndex& index, const std::string& prefix);

// tokens: int32 [positions, N] -> hidden states [width, positions, N] after the
// final layer norm. clip_skip 1 = last layer, 2 = penultimate, ...
ggml_tensor* build_clip_text(nn::Ctx& c, const ClipTextConfig& cfg, ggml_tensor* tokens,
                             int clip_skip);

// Names of the encoder layers' prefixes, in order (for layer split).
std::vector<std::string> clip_layer_prefixes(const ClipTextConfig& cfg);

}  // namespace ggdiff::models
