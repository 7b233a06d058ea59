#include "pipeline/model_files.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "families/registry.h"

namespace ggdiff {
namespace {

constexpr const char* kDefaultModel = "ggdiff-toy-shapes.safetensors";

std::string executable_dir() {
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    return ec ? std::string() : exe.parent_path().string();
}

}  // namespace

std::string default_model_path() {
    if (const char* env = std::getenv("GGDIFF_DEFAULT_MODEL"); env && *env) return env;
    std::vector<std::string> candidates;
    const std::string exe = executable_dir();
    if (!exe.empty()) {
        candidates.push_back(exe + "/../models/" + kDefaultModel);
        candidates.push_back(exe + "/../../models/" + kDefaultModel);  // build/tests/...
        candidates.push_back(exe + "/../share/ggdiff/" + kDefaultModel);
    }
#ifdef GGDIFF_SOURCE_DIR_MODELS
    candidates.push_back(std::string(GGDIFF_SOURCE_DIR_MODELS) + "/" + kDefaultModel);
#endif
    for (const std::string& c : candidates) {
        std::error_code ec;
        if (std::filesystem::is_regular_file(c, ec)) {
            return std::filesystem::weakly_canonical(c, ec).string();
        }
    }
    return "";
}

Result<TensorIndex> open_model_files(const ModelOptions& options) {
    ModelOptions o = options;
    const bool builtin = o.model.empty() && o.diffusion_model.empty();
    if (builtin) o.model = default_model_path();
    TensorIndex index = model_index();
    const std::pair<const char*, const std::string*> roles[] = {
        {"model", &o.model},
        {"diffusion-model", &o.diffusion_model},
        {"high-noise-diffusion-model", &o.high_noise_diffusion_model},
        {"uncond-diffusion-model", &o.uncond_diffusion_model},
        {"vae", &o.vae},
        {"clip_l", &o.clip_l},
        {"clip_g", &o.clip_g},
        {"t5xxl", &o.t5xxl},
        {"llm", &o.llm},
        {"llm_vision", &o.llm_vision},  // after --llm: its visual.* tensors give way
        {"clip_vision", &o.clip_vision},
        {"taesd", &o.taesd},
        {"control-net", &o.control_net},
        {"pulid-weights", &o.pulid_weights},
        {"photo-maker", &o.photo_maker},
        {"audio-vae", &o.audio_vae},
        {"embeddings-connectors", &o.embeddings_connectors},
    };
    bool any = false;
    for (const auto& [role, path] : roles) {
        if (path->empty()) continue;
        any = true;
        Status st = index.add(*path, prefix_for_role(role));
        if (!st.ok()) {
            return st.with_context(builtin && path == &o.model ? std::string("the built-in model")
                                                               : std::string("--") + role);
        }
    }
    if (!any) {
        return Status::Error(
            "no model given: pass -m MODEL (or --diffusion-model); the built-in model "
            "(models/ggdiff-toy-shapes.safetensors) was not found either");
    }
    return index;
}

}  // namespace ggdiff
