#include "pipeline/model_files.h"

namespace ggdiff {

Result<TensorIndex> open_model_files(const ModelOptions& o) {
    TensorIndex index;
    const std::pair<const char*, const std::string*> roles[] = {
        {"model", &o.model},   {"diffusion-model", &o.diffusion_model},
        {"vae", &o.vae},       {"clip_l", &o.clip_l},
        {"clip_g", &o.clip_g}, {"t5xxl", &o.t5xxl},
        {"llm", &o.llm},       {"taesd", &o.taesd},
    };
    bool any = false;
    for (const auto& [role, path] : roles) {
        if (path->empty()) continue;
        any = true;
        Status st = index.add(*path, prefix_for_role(role));
        if (!st.ok()) return st.with_context(std::string("--") + role);
    }
    if (!any) return Status::Error("no model given: pass -m MODEL (or --diffusion-model)");
    return index;
}

}  // namespace ggdiff
