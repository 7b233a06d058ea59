// diffusers' ZImageTransformer2DModel names (the transformer/ folder of Tongyi-MAI/Z-Image-Turbo)
// -> the original single-file names the Z-Image DiT reads. The separate to_q / to_k / to_v
// projections keep their names (attention.to_q ...); the graph reads them where a file has no
// fused attention.qkv.
#include "families/z_image/names.h"

#include "io/name_util.h"

namespace ggdiff {

bool is_diffusers_z_image_layout(const std::vector<std::string>& names) {
    for (const std::string& n : names) {
        if (starts_with(n, "all_x_embedder.") || starts_with(n, "all_final_layer.")) return true;
    }
    return false;
}

bool diffusers_z_image_to_original(const std::string& name, std::string* out) {
    std::string n = name;
    // The patch-size keyed embedders ("2-1": patch 2, frame patch 1).
    if (replace_prefix(&n, "all_x_embedder.2-1.", "x_embedder.") ||
        replace_prefix(&n, "all_final_layer.2-1.", "final_layer.")) {
        *out = n;
        return true;
    }
    static const std::pair<const char*, const char*> kAttention[] = {
        {"attention.norm_q.", "attention.q_norm."},
        {"attention.norm_k.", "attention.k_norm."},
        {"attention.to_out.0.", "attention.out."},
    };
    for (const char* group : {"layers.", "noise_refiner.", "context_refiner."}) {
        int index = 0;
        std::string rest;
        if (!take_indexed(n, group, &index, &rest)) continue;
        for (const auto& [from, to] : kAttention) {
            if (replace_prefix(&rest, from, to)) {
                *out = group + std::to_string(index) + "." + rest;
                return true;
            }
        }
        return false;
    }
    return false;
}

namespace {

bool bare_z_image(const std::vector<std::string>& names) {
    bool cap = false, x = false;
    for (const std::string& n : names) {
        cap = cap || starts_with(n, "cap_embedder.");
        x = x || starts_with(n, "x_embedder.");
    }
    return cap && (x || is_diffusers_z_image_layout(names));
}

}  // namespace

const ModelLayout kZImageLayout = {
    bare_z_image,
    is_diffusers_z_image_layout,
    diffusers_z_image_to_original,
    "diffusers Z-Image layout renamed to the original names",
    {"ZImagePipeline", "ZImageImg2ImgPipeline"},
    {{"transformer", "model.diffusion_model."},
     {"vae", "first_stage_model."},
     {"text_encoder", "text_encoders.llm."}},
};

}  // namespace ggdiff
