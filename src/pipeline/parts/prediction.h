// The noise prediction of the UNet families (SD1, SD2, SDXL).
#pragma once

#include <string>

#include "pipeline/family.h"

namespace ggdiff {

// eps unless --prediction or the checkpoint's metadata says v. `family` names the family in
// the error for other --prediction values.
Result<sampling::Prediction> family_prediction(const FamilyContext& ctx, const std::string& family);

}  // namespace ggdiff
