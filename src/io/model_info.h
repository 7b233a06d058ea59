// A summary of what a TensorIndex holds (for -M info, auto-fit sizes and family choice).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "io/tensor_index.h"

namespace ggdiff {

struct ModelInfo {
    size_t tensor_count = 0;
    std::map<std::string, size_t> dtype_histogram;  // "F16", "BF16", "q4_K", ... -> count
    // "sd1", "sd2", "sdxl", "sd3", "flux", "qwen_image", "qwen_image_layered" or "unknown".
    std::string family = "unknown";
    int context_dim = 0;                        // UNet cross-attention width, if any
    std::array<uint64_t, 4> component_bytes{};  // stored bytes, indexed by Component
    uint64_t total_bytes = 0;
    std::vector<std::string> files;
};

// The model family from the canonical names (UNet families by their context width).
std::string detect_family(const TensorIndex& index, int* context_dim = nullptr);

ModelInfo summarize(const TensorIndex& index);

// Human-readable, several lines (what `ggdiff -M info` prints).
std::string format_model_info(const ModelInfo& info);

}  // namespace ggdiff
