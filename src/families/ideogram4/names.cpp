#include "families/ideogram4/names.h"

#include <algorithm>

#include "io/name_util.h"
#include "pipeline/parts/dit_lora_names.h"

namespace ggdiff {
namespace {

// An Ideogram 4 DiT alone (its own names, no prefix).
bool bare_ideogram4(const std::vector<std::string>& names) {
    return std::find(names.begin(), names.end(), "embed_image_indicator.weight") != names.end();
}

}  // namespace

const ModelLayout kIdeogram4Layout = {bare_ideogram4, nullptr, nullptr, nullptr, {}, {}};

std::vector<std::string> ideogram4_lora_keys(const std::string& weight) {
    std::vector<std::string> keys;
    if (!ends_with(weight, ".weight")) return keys;
    const std::string path = weight.substr(0, weight.size() - 7);
    dit_lora::original_keys(path, &keys);
    dit_lora::diffusers_keys(path, &keys);
    std::vector<std::string> unique;
    for (std::string& k : keys) {
        if (std::find(unique.begin(), unique.end(), k) == unique.end()) unique.push_back(k);
    }
    return unique;
}

LoraTarget ideogram4_lora_target(ModuleRunner& runner, const char* label) {
    // The unconditional DiT's weights are model.diffusion_model.uncond.*: its keys name
    // "uncond." after the prefix ("diffusion_model.uncond.layers.0.attention.qkv").
    return dit_lora::dit_lora_target(runner, label, "model.diffusion_model.", ideogram4_lora_keys,
                                     nullptr);
}

}  // namespace ggdiff
