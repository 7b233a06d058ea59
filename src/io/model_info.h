// A summary of what a TensorIndex holds (for -M info and auto-fit sizes). The family fields
// are the registry's (families/registry.h), filled in by the caller: io knows no family.
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
    std::string family = "unknown";       // the registry's id: "sd1", "flux", ... or "unknown"
    std::string family_note;              // "FLUX.1", "SD3 / SD3.5; not supported yet", ...
    std::vector<std::string> looked_for;  // with "unknown": what each family's detection wants
    int context_dim = 0;                  // UNet cross-attention width, if any
    std::array<uint64_t, 4> component_bytes{};  // stored bytes, indexed by Component
    // Of the diffusion bytes: the unconditional DiT's (--uncond-diffusion-model, filed under
    // model.diffusion_model.uncond.).
    uint64_t uncond_diffusion_bytes = 0;
    uint64_t total_bytes = 0;
    std::vector<std::string> files;
};

ModelInfo summarize(const TensorIndex& index);

// Human-readable, several lines (what `ggdiff -M info` prints).
std::string format_model_info(const ModelInfo& info);

}  // namespace ggdiff
