// Wan DiT names: diffusers' WanTransformer3DModel (the transformer/ folder of
// Wan-AI/Wan2.1-*-Diffusers)
// -> the original Wan / ComfyUI names the DiT reads, and the keys LoRA files address its
// weights by (original: kohya / musubi-tuner "lora_unet_blocks_0_self_attn_q", ComfyUI
// "diffusion_model.blocks.0.self_attn.q", bare; diffusers / PEFT
// "transformer.blocks.0.attn1.to_q").
#pragma once

#include <string>
#include <vector>

#include "io/model_layout.h"
#include "pipeline/family.h"

namespace ggdiff {

// Whether the names are diffusers' Wan transformer names (condition_embedder.*).
bool is_diffusers_wan_layout(const std::vector<std::string>& names);

// One diffusers Wan transformer name -> its original name (false: kept as it is).
bool diffusers_wan_to_original(const std::string& name, std::string* out);

// The LoRA keys of one Wan DiT weight (its original path relative to the DiT, ending in
// ".weight").
std::vector<std::string> wan_lora_keys(const std::string& weight);

// The Wan DiT as a LoRA target, its weights declared under `prefix`.
LoraTarget wan_lora_target(ModuleRunner& runner, const std::string& prefix);

extern const ModelLayout kWanLayout;

}  // namespace ggdiff
