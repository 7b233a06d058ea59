// ERNIE-Image's tensor names: the DiT's names are diffusers' ErnieImageTransformer2DModel
// names in every file users have (the diffusers transformer/ folder, single files with or
// without "model.diffusion_model."), so there is nothing to rename; the layout files a bare
// DiT under model.diffusion_model. and routes a diffusers ErnieImagePipeline folder.
#pragma once

#include <string>
#include <vector>

#include "io/model_layout.h"

namespace ggdiff {

// Whether the names are an ERNIE-Image DiT without a prefix.
bool is_bare_ernie_image(const std::vector<std::string>& names);

extern const ModelLayout kErnieImageLayout;

}  // namespace ggdiff
