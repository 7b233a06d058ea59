// MiniT2I's file names. The transformer's own file (MiniT2I/MiniT2I minit2i-b-16/transformer/
// diffusion_pytorch_model.safetensors) names its weights "model.net.<name>" (a training
// wrapper around the MMJiT network); stable-diffusion.cpp files it under
// "model.diffusion_model." and reads "model.diffusion_model.model.net.<name>", which is the
// canonical form here too (its single files and -M convert outputs read back in both
// engines). Files whose names lack the wrapper ("net.<name>" or "<name>") get it.
//
// LoRA keys of a weight: kohya ("lora_unet_double_blocks_0_img_qkv"), ComfyUI
// ("diffusion_model.double_blocks.0.img_qkv"), PEFT ("transformer.double_blocks.0.img_qkv",
// "base_model.model.double_blocks.0.img_qkv"), each also with "net." or "model.net." in front.
#pragma once

#include <string>
#include <vector>

#include "io/model_layout.h"
#include "pipeline/family.h"
#include "runtime/module_runner.h"

namespace ggdiff {

extern const ModelLayout kMiniT2ILayout;

// The LoRA keys of a MiniT2I weight named relative to model.diffusion_model.
// ("model.net.double_blocks.0.img_qkv.weight").
std::vector<std::string> minit2i_lora_keys(const std::string& weight);

LoraTarget minit2i_lora_target(ModuleRunner& runner);

}  // namespace ggdiff
