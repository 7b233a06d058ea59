// SD3 / SD3.5 (MMDiT: joint_blocks of context and x blocks). Recognised, not run yet: -M info
// names it and generation stops before loading with "not supported yet".
#include "io/name_util.h"
#include "pipeline/family.h"

namespace ggdiff {
namespace {

constexpr const char* kDit = "model.diffusion_model.";

bool detect(const TensorIndex& index) {
    const std::string d = kDit;
    return index.has(d + "joint_blocks.0.x_block.attn.qkv.weight") &&
           index.has(d + "x_embedder.proj.weight");
}

bool bare_sd3(const std::vector<std::string>& names) {
    for (const std::string& n : names) {
        if (starts_with(n, "joint_blocks.")) return true;
    }
    return false;
}

const ModelLayout kSd3Layout = {
    bare_sd3,
    nullptr,
    nullptr,
    nullptr,
    {"StableDiffusion3Pipeline", "StableDiffusion3Img2ImgPipeline"},
    {{"transformer", "model.diffusion_model."},
     {"vae", "first_stage_model."},
     {"text_encoder", "text_encoders.clip_l."},
     {"text_encoder_2", "text_encoders.clip_g."},
     {"text_encoder_3", "text_encoders.t5xxl."}},
};

}  // namespace

extern const FamilyRecipe kSd3Recipe = {
    "sd3",
    "SD3 / SD3.5",
    "model.diffusion_model.joint_blocks.0.x_block.attn.qkv.weight and x_embedder.proj.weight",
    detect,
    nullptr,
    nullptr,
    &kSd3Layout};

}  // namespace ggdiff
