#include "families/pid/names.h"

#include <algorithm>

#include "io/name_util.h"
#include "pipeline/parts/dit_lora_names.h"

namespace ggdiff {
namespace {

constexpr const char* kWrapper = "net.";
constexpr const char* kMark = "lq_proj.latent_proj.0.weight";

bool top_level(const std::string& n) {
    for (const char* p : {"pixel_embedder.", "s_embedder.", "t_embedder.", "y_embedder.",
                          "patch_blocks.", "pixel_blocks.", "final_layer.", "lq_proj."}) {
        if (starts_with(n, p)) return true;
    }
    return n == "y_pos_embedding";
}

bool has_name(const std::vector<std::string>& names, const std::string& want) {
    return std::find(names.begin(), names.end(), want) != names.end();
}

// A PiD DiT alone, with or without its wrapper.
bool bare_pid(const std::vector<std::string>& names) {
    return has_name(names, std::string(kWrapper) + kMark) || has_name(names, kMark);
}

// Names without the wrapper.
bool unwrapped_pid(const std::vector<std::string>& names) {
    return has_name(names, kMark);
}

bool add_wrapper(const std::string& name, std::string* out) {
    if (!top_level(name)) return false;
    *out = kWrapper + name;
    return true;
}

}  // namespace

const ModelLayout kPidLayout = {
    bare_pid, unwrapped_pid, add_wrapper, "PiD DiT names given their \"net.\" wrapper", {}, {},
};

std::vector<std::string> pid_lora_keys(const std::string& weight) {
    std::vector<std::string> keys;
    if (!ends_with(weight, ".weight") || !starts_with(weight, kWrapper)) return keys;
    const std::string path = weight.substr(0, weight.size() - 7);
    const std::string inner = path.substr(std::string(kWrapper).size());
    for (const std::string& p : {path, inner}) {
        dit_lora::original_keys(p, &keys);
        dit_lora::diffusers_keys(p, &keys);
    }
    std::vector<std::string> unique;
    for (std::string& k : keys) {
        if (std::find(unique.begin(), unique.end(), k) == unique.end()) unique.push_back(k);
    }
    return unique;
}

LoraTarget pid_lora_target(ModuleRunner& runner) {
    return dit_lora::dit_lora_target(runner, "PiD DiT", "model.diffusion_model.", pid_lora_keys,
                                     nullptr);
}

}  // namespace ggdiff
