// The family recipes (one file each under pipeline/families/); the registry lists them.
#pragma once

#include "pipeline/family.h"

namespace ggdiff {

extern const FamilyRecipe kSdRecipe;                // SD1.x, SD2.x
extern const FamilyRecipe kSdxlRecipe;              // SDXL (base)
extern const FamilyRecipe kQwenImageLayeredRecipe;  // Qwen Image Layered (before Qwen Image)
extern const FamilyRecipe kQwenImageRecipe;         // Qwen Image
extern const FamilyRecipe kFluxRecipe;              // FLUX.1 dev, schnell
extern const FamilyRecipe kZImageRecipe;            // Z-Image (Turbo)

// The UNet families' noise prediction: eps unless --prediction or the checkpoint's
// metadata says v. `family` names the family in the error for other --prediction values.
Result<sampling::Prediction> family_prediction(const FamilyContext& ctx, const std::string& family);

}  // namespace ggdiff
