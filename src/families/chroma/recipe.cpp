// Chroma (a FLUX.1-schnell derivative whose modulation comes from distilled_guidance_layer
// instead of per-block modulation layers). Recognised, not run yet. Its names are FLUX's
// (families/flux/names.h files a bare one under the diffusion model).
#include "pipeline/family.h"

namespace ggdiff {
namespace {

constexpr const char* kDit = "model.diffusion_model.";

bool detect(const TensorIndex& index) {
    const std::string d = kDit;
    return index.has(d + "distilled_guidance_layer.in_proj.weight") &&
           index.has(d + "img_in.weight");
}

}  // namespace

extern const FamilyRecipe kChromaRecipe = {
    "chroma", "Chroma",
    "model.diffusion_model.distilled_guidance_layer.in_proj.weight and img_in.weight", detect,
    nullptr};

}  // namespace ggdiff
