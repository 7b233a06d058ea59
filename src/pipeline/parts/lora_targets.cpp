#include "pipeline/parts/lora_targets.h"

#include <memory>

#include "io/lora_names.h"
#include "io/name_util.h"

namespace ggdiff {
namespace {

constexpr const char* kUnetPrefix = "model.diffusion_model.";

}  // namespace

LoraTarget unet_lora_target(UNetDenoiser& unet) {
    std::vector<std::string> names;
    for (const auto& entry : unet.runner().weights().declared()) {
        if (starts_with(entry.first, kUnetPrefix)) {
            names.push_back(entry.first.substr(std::string(kUnetPrefix).size()));
        }
    }
    auto paths = std::make_shared<UnetDiffusersPaths>(names);
    LoraTarget t;
    t.label = "UNet";
    t.runner = &unet.runner();
    t.keys = [paths](const std::string& weight) {
        if (!starts_with(weight, kUnetPrefix)) return std::vector<std::string>{};
        return lora_unet_keys(weight.substr(std::string(kUnetPrefix).size()), *paths);
    };
    return t;
}

LoraTarget clip_lora_target(ClipTextEncoder& encoder, const std::string& label,
                            std::vector<std::string> prefixes) {
    const std::string prefix = encoder.config().prefix;  // ".../text_model."
    LoraTarget t;
    t.label = label;
    t.runner = &encoder.runner();
    t.text_encoder = true;
    t.keys = [prefix, prefixes](const std::string& weight) {
        if (!starts_with(weight, prefix)) return std::vector<std::string>{};
        return lora_clip_keys("text_model." + weight.substr(prefix.size()), prefixes);
    };
    return t;
}

}  // namespace ggdiff
