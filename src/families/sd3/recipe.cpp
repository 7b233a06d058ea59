// SD3 / SD3.5 (MMDiT: joint_blocks of context and x blocks). Recognised, not run yet: -M info
// names it and generation stops before loading with "not supported yet".
#include "families/sd3/names.h"
#include "pipeline/family.h"

namespace ggdiff {
namespace {

constexpr const char* kDit = "model.diffusion_model.";

bool detect(const TensorIndex& index) {
    const std::string d = kDit;
    return index.has(d + "joint_blocks.0.x_block.attn.qkv.weight") &&
           index.has(d + "x_embedder.proj.weight");
}

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
