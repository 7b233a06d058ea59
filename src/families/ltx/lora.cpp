#include "families/ltx/lora.h"

#include <algorithm>

#include "io/name_util.h"
#include "pipeline/parts/dit_lora_names.h"

namespace ggdiff {

std::vector<std::string> ltx_lora_keys(const std::string& weight) {
    std::vector<std::string> keys;
    if (!ends_with(weight, ".weight")) return keys;
    const std::string path = weight.substr(0, weight.size() - std::string(".weight").size());
    dit_lora::original_keys(path, &keys);
    dit_lora::diffusers_keys(path, &keys);
    std::vector<std::string> unique;
    for (std::string& k : keys) {
        if (std::find(unique.begin(), unique.end(), k) == unique.end()) {
            unique.push_back(std::move(k));
        }
    }
    return unique;
}

LoraTarget ltx_lora_target(ModuleRunner& runner, const std::string& prefix) {
    return dit_lora::dit_lora_target(runner, "LTX-2 DiT", prefix, ltx_lora_keys, nullptr);
}

}  // namespace ggdiff
