// LongCat-Image's tensor names: its DiT has FLUX.1's (families/flux/names.h), with two forms
// of its own. Comfy-Org's single files store the q/k RMSNorm weights as ".weight" (FLUX's files
// as ".scale"), and the diffusers LongCatImageTransformer2DModel names its timestep embedder
// "time_embed.timestep_embedder" where FLUX's says "time_text_embed.timestep_embedder".
#pragma once

#include "io/model_layout.h"

namespace ggdiff {

// Either form renamed to the original FLUX names; diffusers LongCat pipelines routed (the
// transformer, the FLUX VAE, the Qwen2.5-VL text encoder).
extern const ModelLayout kLongCatLayout;

}  // namespace ggdiff
