// Lens's tensor names: its DiT's names (Comfy-Org/Lens's lens_bf16.safetensors, with or without
// "model.diffusion_model.") are the reference's and need no renaming; the layout files a bare
// DiT given with -m under model.diffusion_model.
#pragma once

#include <string>
#include <vector>

#include "io/model_layout.h"
#include "pipeline/family.h"
#include "runtime/module_runner.h"

namespace ggdiff {

// Whether the names are a Lens DiT without a prefix.
bool is_bare_lens(const std::vector<std::string>& names);

// LoRA keys of one DiT weight: kohya ("lora_unet_..."), ComfyUI ("diffusion_model....") and
// diffusers / PEFT ("transformer....") forms of its path.
std::vector<std::string> lens_lora_keys(const std::string& weight);
LoraTarget lens_lora_target(ModuleRunner& runner, const std::string& prefix);

extern const ModelLayout kLensLayout;

}  // namespace ggdiff
