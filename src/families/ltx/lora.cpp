#include "families/ltx/lora.h"

#include "pipeline/parts/dit_lora_names.h"

namespace ggdiff {

std::vector<std::string> ltx_lora_keys(const std::string& weight) {
    return dit_lora::same_path_keys(weight);
}

LoraTarget ltx_lora_target(ModuleRunner& runner, const std::string& prefix) {
    return dit_lora::dit_lora_target(runner, "LTX-2 DiT", prefix, ltx_lora_keys, nullptr);
}

}  // namespace ggdiff
