// HiDream-O1-Image's file names: Comfy-Org's single file keeps the Hugging Face model's names
// (model.language_model.*, model.visual.*, model.x_embedder.*, model.t_embedder1.*,
// model.final_layer2.*, lm_head.*). The whole file is the diffusion model: it is filed under
// model.diffusion_model. with the leading "model." dropped, so the language model's layers are
// model.diffusion_model.language_model.layers.N.
#pragma once

#include "io/model_layout.h"

namespace ggdiff {

extern const ModelLayout kHiDreamO1Layout;

}  // namespace ggdiff
