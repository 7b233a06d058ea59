// Boogu Image's file names. Its DiT files keep the network's own names ("double_stream_layers.N.
// img_instruct_attn.processor.img_to_q.weight", ...), which stable-diffusion.cpp files under
// "model.diffusion_model." as they are: a bare DiT given with -m is filed there too.
//
// LoRA keys of a DiT weight: kohya ("lora_unet_double_stream_layers_0_img_self_attn_to_q"),
// ComfyUI ("diffusion_model.double_stream_layers.0.img_self_attn.to_q"), PEFT
// ("transformer.double_stream_layers.0.img_self_attn.to_q", "base_model.model. ..."); the joint
// attention's "processor." projections also without "processor." (the LoRA reader drops it).
#pragma once

#include <string>
#include <vector>

#include "io/model_layout.h"
#include "pipeline/family.h"
#include "runtime/module_runner.h"

namespace ggdiff {

extern const ModelLayout kBooguLayout;

// The LoRA keys of a Boogu DiT weight named relative to model.diffusion_model.
std::vector<std::string> boogu_lora_keys(const std::string& weight);

LoraTarget boogu_lora_target(ModuleRunner& runner);

}  // namespace ggdiff
