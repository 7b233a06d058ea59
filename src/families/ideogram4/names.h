// Ideogram 4's file names. The checkpoint's own names (input_proj, llm_cond_norm,
// llm_cond_proj, t_embedding, adaln_proj, embed_image_indicator, layers.N, final_layer), as
// Ideogram's transformer/ and unconditional_transformer/ files have them, are canonical under
// "model.diffusion_model." (the unconditional DiT under "model.diffusion_model.uncond.", as
// stable-diffusion.cpp files it); a DiT file alone given with -m is filed there.
//
// LoRA keys of a weight (the unconditional DiT's with "uncond." after the prefix): kohya
// ("lora_unet_layers_0_attention_qkv"), ComfyUI
// ("diffusion_model.layers.0.attention.qkv"), bare names and the PEFT "transformer." /
// "base_model.model." forms of the same names.
#pragma once

#include <string>
#include <vector>

#include "io/model_layout.h"
#include "pipeline/family.h"
#include "runtime/module_runner.h"

namespace ggdiff {

extern const ModelLayout kIdeogram4Layout;

// The LoRA keys of an Ideogram 4 weight named relative to model.diffusion_model.
// ("layers.0.attention.qkv.weight").
std::vector<std::string> ideogram4_lora_keys(const std::string& weight);

// The DiT's target, or with label "Ideogram 4 uncond DiT" the unconditional DiT's
// (--uncond-diffusion-model): as stable-diffusion.cpp patches it, only keys that name it
// ("diffusion_model.uncond.layers.0.attention.qkv", "transformer.uncond.", "lora_unet_uncond_")
// reach it; a LoRA of the DiT's own modules leaves it as is.
LoraTarget ideogram4_lora_target(ModuleRunner& runner, const char* label = "Ideogram 4 DiT");

}  // namespace ggdiff
