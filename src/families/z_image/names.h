// Z-Image's own tensor names: diffusers' ZImageTransformer2DModel names ("all_x_embedder.2-1.*",
// "layers.N.attention.norm_q", "...to_out.0") renamed to the original ones ("x_embedder.*",
// "...q_norm", "...out"), and the layout record the registry hands to io.
#pragma once

#include <string>
#include <vector>

#include "io/model_layout.h"

namespace ggdiff {

bool is_diffusers_z_image_layout(const std::vector<std::string>& names);
bool diffusers_z_image_to_original(const std::string& name, std::string* out);

extern const ModelLayout kZImageLayout;

}  // namespace ggdiff
