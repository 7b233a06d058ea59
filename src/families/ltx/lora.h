// LoRA on the LTX-2 DiT: the DiT's names (transformer_blocks.N.attn1.to_q, .ff.net.0.proj,
// .audio_to_video_attn.to_out.0, ...) are the same in the original checkpoints and in diffusers'
// LTX2VideoTransformer3DModel, so one module path answers to kohya ("lora_unet_..."), ComfyUI
// ("diffusion_model....") and diffusers / PEFT ("transformer....") LoRA names alike.
#pragma once

#include <string>
#include <vector>

#include "pipeline/family.h"
#include "runtime/module_runner.h"

namespace ggdiff {

// LoRA keys of one DiT weight (its name relative to the DiT, ending in ".weight"; none for
// other tensors) in normalize_lora_key's form.
std::vector<std::string> ltx_lora_keys(const std::string& weight);
// The LoRA target of the LTX-2 DiT whose weights sit under `prefix` on `runner`.
LoraTarget ltx_lora_target(ModuleRunner& runner, const std::string& prefix);

}  // namespace ggdiff
