#include "placement/module.h"

#include <utility>

#include "placement/spec_text.h"

namespace ggdiff::placement {

const std::vector<Module>& all_modules() {
    static const std::vector<Module> kAll = {
        Module::Diffusion,  Module::TextEncoder, Module::Vae,        Module::Taesd,
        Module::ControlNet, Module::Upscaler,    Module::PhotoMaker, Module::Pulid,
        Module::ClipVision, Module::AudioVae,
    };
    return kAll;
}

const char* module_name(Module m) {
    switch (m) {
        case Module::Diffusion:
            return "diffusion";
        case Module::TextEncoder:
            return "te";
        case Module::Vae:
            return "vae";
        case Module::Taesd:
            return "taesd";
        case Module::ControlNet:
            return "controlnet";
        case Module::Upscaler:
            return "upscaler";
        case Module::PhotoMaker:
            return "photomaker";
        case Module::Pulid:
            return "pulid";
        case Module::ClipVision:
            return "clip_vision";
        case Module::AudioVae:
            return "audio_vae";
    }
    return "?";
}

Result<Module> parse_module(const std::string& name) {
    static const std::pair<const char*, Module> kAliases[] = {
        {"unet", Module::Diffusion},          {"dit", Module::Diffusion},
        {"textencoder", Module::TextEncoder}, {"textencoders", Module::TextEncoder},
        {"clip", Module::TextEncoder},        {"conditioner", Module::TextEncoder},
        {"firststage", Module::Vae},          {"tae", Module::Taesd},
        {"upscale", Module::Upscaler},        {"pm", Module::PhotoMaker},
        {"control", Module::ControlNet},      {"vision", Module::ClipVision},
    };
    const std::string folded = fold_name(name);
    std::vector<std::string> names;
    for (Module m : all_modules()) {
        if (fold_name(module_name(m)) == folded) return m;
        names.push_back(module_name(m));
    }
    for (const auto& a : kAliases) {
        if (folded == a.first) return a.second;
    }
    return Status::Error("unknown module " + quoted(name) + " (known: " + join(names, ", ") + ")");
}

}  // namespace ggdiff::placement
