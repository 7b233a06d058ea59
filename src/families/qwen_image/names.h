// The keys LoRA files address the Qwen Image DiT's weights by. The DiT's own names are
// diffusers' QwenImageTransformer2DModel names ("transformer_blocks.N.attn.to_q",
// "img_mlp.net.0.proj", "img_mod.1", ...) in every form it is loaded from, so every LoRA
// layout names the same path under its own wrapper.
#pragma once

#include <string>
#include <vector>

#include "pipeline/family.h"

namespace ggdiff {

// The LoRA keys of one Qwen Image DiT weight, by its path relative to the DiT's prefix
// (ending in ".weight"): ComfyUI "diffusion_model.<path>", diffusers / PEFT
// "transformer.<path>" (also under "base_model.model."), kohya / musubi-tuner
// "lora_unet_<path with _>", the bare path (the Lightning LoRAs), SimpleTuner
// "lycoris_<path>" and stable-diffusion.cpp's "model.diffusion_model.<path>".
std::vector<std::string> qwen_image_lora_keys(const std::string& weight);

// The Qwen Image DiT (also Edit and Layered) as a LoRA target, its weights declared under
// `prefix`.
LoraTarget qwen_image_lora_target(ModuleRunner& runner, const std::string& prefix);

}  // namespace ggdiff
