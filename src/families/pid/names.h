// PiD's file names. ComfyUI's PixelDiT diffusion model (Comfy-Org/PixelDiT diffusion_models/)
// names its weights "net.<name>"; stable-diffusion.cpp files them under
// "model.diffusion_model." and reads "model.diffusion_model.net.<name>", which is the canonical
// form here too. Files whose names lack the "net." wrapper get it.
//
// LoRA keys of a weight: kohya ("lora_unet_patch_blocks_0_attn_qkv_x"), ComfyUI
// ("diffusion_model.patch_blocks.0.attn.qkv_x"), PEFT ("transformer.patch_blocks.0.attn.qkv_x",
// "base_model.model.patch_blocks.0.attn.qkv_x"), each also with "net." in front.
#pragma once

#include <string>
#include <vector>

#include "io/model_layout.h"
#include "pipeline/family.h"
#include "runtime/module_runner.h"

namespace ggdiff {

extern const ModelLayout kPidLayout;

// The LoRA keys of a PiD weight named relative to model.diffusion_model.
// ("net.patch_blocks.0.attn.qkv_x.weight").
std::vector<std::string> pid_lora_keys(const std::string& weight);

LoraTarget pid_lora_target(ModuleRunner& runner);

}  // namespace ggdiff
