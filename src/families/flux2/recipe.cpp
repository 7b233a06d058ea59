// FLUX.2 (klein, dev: double and single stream blocks under shared modulation layers).
// Recognised, not run yet. Its names are FLUX's (families/flux/names.h files a bare one under
// the diffusion model).
#include "pipeline/family.h"

namespace ggdiff {
namespace {

constexpr const char* kDit = "model.diffusion_model.";

bool detect(const TensorIndex& index) {
    const std::string d = kDit;
    return index.has(d + "double_stream_modulation_img.lin.weight") &&
           index.has(d + "img_in.weight");
}

}  // namespace

extern const FamilyRecipe kFlux2Recipe = {
    "flux2", "FLUX.2",
    "model.diffusion_model.double_stream_modulation_img.lin.weight and img_in.weight", detect,
    nullptr};

}  // namespace ggdiff
