#include "families/qwen_image/names.h"

#include <algorithm>

#include "io/name_util.h"
#include "pipeline/parts/dit_lora_names.h"
#include "runtime/module_runner.h"

namespace ggdiff {
namespace {

// No weight is cut differently by any layout.
std::vector<LoraRowKey> no_row_keys(const std::string&, const std::vector<int64_t>&) {
    return {};
}

}  // namespace

std::vector<std::string> qwen_image_lora_keys(const std::string& weight) {
    std::vector<std::string> keys;
    if (!ends_with(weight, ".weight")) return keys;
    const std::string path = weight.substr(0, weight.size() - 7);
    dit_lora::original_keys(path, &keys);
    dit_lora::diffusers_keys(path, &keys);
    // Both lists hold the bare path: keep each key once.
    std::vector<std::string> unique;
    for (std::string& k : keys) {
        if (std::find(unique.begin(), unique.end(), k) == unique.end())
            unique.push_back(std::move(k));
    }
    return unique;
}

LoraTarget qwen_image_lora_target(ModuleRunner& runner, const std::string& prefix) {
    return dit_lora::dit_lora_target(runner, "Qwen Image DiT", prefix, qwen_image_lora_keys,
                                     no_row_keys);
}

}  // namespace ggdiff
