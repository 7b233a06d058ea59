// SD3 / SD3.5's own tensor names: the original MMDiT names ("joint_blocks.N.x_block...",
// bare or under "model.diffusion_model."), the diffusers SD3Transformer2DModel form renamed
// to them (split q/k/v kept apart as attn.q / attn.k / attn.v), and the layout record the
// registry hands to io.
#pragma once

#include "io/model_layout.h"

namespace ggdiff {

// Bare SD3 MMDiTs and the diffusers StableDiffusion3 pipelines.
extern const ModelLayout kSd3Layout;

}  // namespace ggdiff
