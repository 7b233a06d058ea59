// FLUX.2's own tensor names: diffusers' Flux2Transformer2DModel form ("transformer_blocks.N",
// "single_transformer_blocks.N", "x_embedder", "time_guidance_embed", the shared
// "double_stream_modulation_img.linear", ...) renamed to BFL's single-file names (a double
// block's split q / k / v kept apart as img_attn.q, txt_attn.k, ...; the final (scale, shift)
// norm as final_layer.adaLN_scale_shift), the layout record the registry hands to io, and the
// keys LoRA files address the DiT's weights by.
#pragma once

#include <string>
#include <vector>

#include "io/lora_names.h"
#include "io/model_layout.h"
#include "pipeline/family.h"

namespace ggdiff {

class DiffusersFlux2Map {
  public:
    // Names of a diffusers Flux2Transformer2DModel (its shared modulation or the single
    // blocks' fused to_qkv_mlp_proj): FLUX.1's diffusers names have neither.
    static bool detect(const std::vector<std::string>& names);
    static bool map(const std::string& name, std::string* out);
};

// The LoRA keys of one FLUX.2 DiT weight, by its path relative to "model.diffusion_model."
// (ending in ".weight"): whole-weight keys (kohya "lora_unet_<path>", ComfyUI
// "diffusion_model.<path>", the bare path, and the diffusers module path under
// "transformer." or bare, as PEFT saves it), and row keys where the two forms cut a weight
// differently: diffusers to_q / to_k / to_v (add_*_proj) each patch a third of a fused
// img_attn.qkv (txt_attn.qkv), a fused-form LoRA patches split q / k / v a third of its
// output each, and diffusers' (scale, shift) norm_out lands swapped on the original
// (shift, scale) final_layer.adaLN_modulation.1 (and the other way round).
std::vector<std::string> flux2_lora_keys(const std::string& weight);
std::vector<LoraRowKey> flux2_lora_row_keys(const std::string& weight,
                                            const std::vector<int64_t>& shape);

// The FLUX.2 DiT as a LoRA target (its weights are declared under "model.diffusion_model.").
LoraTarget flux2_lora_target(ModuleRunner& runner);

// Bare FLUX.2 DiTs (BFL or diffusers names) and the diffusers FLUX.2 pipelines. It must come
// before FLUX.1's layout (kFluxLayout), whose diffusers detection also matches FLUX.2's
// "single_transformer_blocks." / "x_embedder." names: the registry lists layouts in recipe
// order and kFlux2Recipe precedes kFluxRecipe.
extern const ModelLayout kFlux2Layout;

}  // namespace ggdiff
