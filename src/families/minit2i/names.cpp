#include "families/minit2i/names.h"

#include <algorithm>

#include "io/name_util.h"
#include "pipeline/parts/dit_lora_names.h"

namespace ggdiff {
namespace {

constexpr const char* kWrapper = "model.net.";
constexpr const char* kMark = "img_embedder.proj1.weight";

bool top_level(const std::string& n) {
    for (const char* p : {"img_embedder.", "txt_embedder.", "t_embedder.", "pooled_embedder.",
                          "txt_preamble_blocks.", "double_blocks.", "final_layer."}) {
        if (starts_with(n, p)) return true;
    }
    return n == "mask_token";
}

bool has_name(const std::vector<std::string>& names, const std::string& want) {
    return std::find(names.begin(), names.end(), want) != names.end();
}

// A MiniT2I DiT alone, with or without its wrapper.
bool bare_minit2i(const std::vector<std::string>& names) {
    return has_name(names, std::string(kWrapper) + kMark) ||
           has_name(names, std::string("net.") + kMark) || has_name(names, kMark);
}

// Names without the full wrapper.
bool unwrapped_minit2i(const std::vector<std::string>& names) {
    return has_name(names, std::string("net.") + kMark) || has_name(names, kMark);
}

bool add_wrapper(const std::string& name, std::string* out) {
    if (starts_with(name, "net.") && top_level(name.substr(4))) {
        *out = "model." + name;
        return true;
    }
    if (!top_level(name)) return false;
    *out = kWrapper + name;
    return true;
}

}  // namespace

const ModelLayout kMiniT2ILayout = {
    bare_minit2i, unwrapped_minit2i,
    add_wrapper,  "MiniT2I DiT names given their \"model.net.\" wrapper",
    {},           {},
};

std::vector<std::string> minit2i_lora_keys(const std::string& weight) {
    std::vector<std::string> keys;
    if (!ends_with(weight, ".weight") || !starts_with(weight, kWrapper)) return keys;
    const std::string path = weight.substr(0, weight.size() - 7);
    const std::string inner = path.substr(std::string(kWrapper).size());
    for (const std::string& p : {path, "net." + inner, inner}) {
        dit_lora::original_keys(p, &keys);
        dit_lora::diffusers_keys(p, &keys);
    }
    std::vector<std::string> unique;
    for (std::string& k : keys) {
        if (std::find(unique.begin(), unique.end(), k) == unique.end()) unique.push_back(k);
    }
    return unique;
}

LoraTarget minit2i_lora_target(ModuleRunner& runner) {
    return dit_lora::dit_lora_target(runner, "MiniT2I DiT", "model.diffusion_model.",
                                     minit2i_lora_keys, nullptr);
}

}  // namespace ggdiff
