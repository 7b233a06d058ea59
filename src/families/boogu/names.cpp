#include "families/boogu/names.h"

#include <algorithm>

#include "io/name_util.h"
#include "pipeline/parts/dit_lora_names.h"

namespace ggdiff {
namespace {

constexpr const char* kMark = "double_stream_layers.0.img_instruct_attn.processor.img_to_q.weight";

bool bare_boogu(const std::vector<std::string>& names) {
    return std::find(names.begin(), names.end(), kMark) != names.end();
}

}  // namespace

const ModelLayout kBooguLayout = {bare_boogu, nullptr, nullptr, nullptr, {}, {}};

std::vector<std::string> boogu_lora_keys(const std::string& weight) {
    std::vector<std::string> keys;
    if (!ends_with(weight, ".weight")) return keys;
    const std::string path = weight.substr(0, weight.size() - 7);
    // The LoRA reader drops ".processor" from dotted keys (diffusers' attention-processor
    // LoRAs); the joint attention's projections live under "processor.", so they answer to
    // both forms (kohya's underscored keys keep it).
    std::string dotted = path;
    for (size_t at; (at = dotted.find(".processor.")) != std::string::npos;) {
        dotted.erase(at, 10);
    }
    for (const std::string& p : {path, dotted}) {
        dit_lora::original_keys(p, &keys);
        dit_lora::diffusers_keys(p, &keys);
    }
    std::vector<std::string> unique;
    for (std::string& k : keys) {
        if (std::find(unique.begin(), unique.end(), k) == unique.end()) unique.push_back(k);
    }
    return unique;
}

LoraTarget boogu_lora_target(ModuleRunner& runner) {
    return dit_lora::dit_lora_target(runner, "Boogu DiT", "model.diffusion_model.", boogu_lora_keys,
                                     nullptr);
}

}  // namespace ggdiff
