#include "families/lens/names.h"

#include <algorithm>

#include "io/name_util.h"
#include "pipeline/parts/dit_lora_names.h"

namespace ggdiff {

namespace {

std::vector<LoraRowKey> no_row_keys(const std::string&, const std::vector<int64_t>&) {
    return {};
}

}  // namespace

bool is_bare_lens(const std::vector<std::string>& names) {
    bool mlp = false, txt_norm = false;
    for (const std::string& n : names) {
        mlp = mlp || (starts_with(n, "transformer_blocks.") && ends_with(n, ".img_mlp.w1.weight"));
        txt_norm = txt_norm || starts_with(n, "txt_norm.0.");
    }
    return mlp && txt_norm;
}

std::vector<std::string> lens_lora_keys(const std::string& weight) {
    return dit_lora::same_path_keys(weight);
}

LoraTarget lens_lora_target(ModuleRunner& runner, const std::string& prefix) {
    return dit_lora::dit_lora_target(runner, "Lens DiT", prefix, lens_lora_keys, no_row_keys);
}

const ModelLayout kLensLayout = {is_bare_lens, nullptr, nullptr, nullptr, {}, {}};

}  // namespace ggdiff
