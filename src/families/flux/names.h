// FLUX.1's own tensor names: the diffusers FluxTransformer2DModel form renamed to the original
// single-file names (split q/k/v kept apart), the layout record the registry hands to io, and
// the keys LoRA files address the DiT's weights by.
#pragma once

#include <string>
#include <vector>

#include "io/lora_names.h"
#include "io/model_layout.h"
#include "pipeline/family.h"

namespace ggdiff {

class DiffusersFluxMap {
  public:
    static bool detect(const std::vector<std::string>& names);
    static bool map(const std::string& name, std::string* out);
};

// The LoRA keys of one FLUX.1 DiT weight, by its path relative to the DiT's prefix (ending in
// ".weight"): whole-weight keys (kohya "lora_unet_<path>", ComfyUI "diffusion_model.<path>",
// the bare path, and the diffusers module path under "transformer." or bare, as PEFT saves
// it), and row keys where the two forms cut a weight differently: diffusers to_q / to_k /
// to_v (add_*_proj) each patch a third of a fused img_attn.qkv (txt_attn.qkv), a single
// block's to_q / to_k / to_v / proj_mlp patch their rows of linear1, a fused-form LoRA
// patches the split parts with its rows, and diffusers' (scale, shift) norm_out lands
// swapped on the original (shift, scale) final_layer.adaLN_modulation.1 (and the other way
// round).
std::vector<std::string> flux_lora_keys(const std::string& weight);
std::vector<LoraRowKey> flux_lora_row_keys(const std::string& weight,
                                           const std::vector<int64_t>& shape);

// The FLUX.1 DiT (also Kontext) as a LoRA target, its weights declared under `prefix`.
LoraTarget flux_lora_target(ModuleRunner& runner, const std::string& prefix);

// Bare FLUX-layout DiTs (FLUX.1, and the double/single-block families that share its names)
// and the diffusers FLUX pipelines.
extern const ModelLayout kFluxLayout;

}  // namespace ggdiff
