#include "families/anima/names.h"

#include <algorithm>

#include "io/name_util.h"
#include "pipeline/parts/dit_lora_names.h"

namespace ggdiff {
namespace {

bool top_level(const std::string& n) {
    return starts_with(n, "llm_adapter.") || starts_with(n, "blocks.") ||
           starts_with(n, "x_embedder.") || starts_with(n, "t_embedder.") ||
           starts_with(n, "t_embedding_norm.") || starts_with(n, "final_layer.");
}

// Names without the "net." wrapper: an adapter at the top level.
bool unwrapped_anima(const std::vector<std::string>& names) {
    for (const std::string& n : names) {
        if (starts_with(n, "llm_adapter.blocks.")) return true;
    }
    return false;
}

bool add_net(const std::string& name, std::string* out) {
    if (!top_level(name)) return false;
    *out = "net." + name;
    return true;
}

bool bare_anima(const std::vector<std::string>& names) {
    for (const std::string& n : names) {
        if (starts_with(n, "net.llm_adapter.blocks.") || starts_with(n, "llm_adapter.blocks."))
            return true;
    }
    return false;
}

std::vector<LoraRowKey> no_row_keys(const std::string&, const std::vector<int64_t>&) {
    return {};
}

}  // namespace

const ModelLayout kAnimaLayout = {
    bare_anima, unwrapped_anima, add_net, "Anima DiT names given their \"net.\" wrapper", {}, {},
};

std::vector<std::string> anima_lora_keys(const std::string& weight) {
    std::vector<std::string> keys;
    if (!ends_with(weight, ".weight")) return keys;
    const std::string path = weight.substr(0, weight.size() - 7);
    std::vector<std::string> paths = {path};
    if (starts_with(path, "net.")) paths.push_back(path.substr(4));
    for (const std::string& p : paths) {
        dit_lora::original_keys(p, &keys);
        dit_lora::diffusers_keys(p, &keys);
    }
    std::vector<std::string> unique;
    for (std::string& k : keys) {
        if (std::find(unique.begin(), unique.end(), k) == unique.end())
            unique.push_back(std::move(k));
    }
    return unique;
}

LoraTarget anima_lora_target(ModuleRunner& runner, const char* label,
                             const std::string& dit_prefix) {
    return dit_lora::dit_lora_target(runner, label, dit_prefix, anima_lora_keys, no_row_keys);
}

}  // namespace ggdiff
