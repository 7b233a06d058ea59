// The LoRA targets (family.h) of the UNet and CLIP parts: which keys their weights answer to.
#pragma once

#include <string>
#include <vector>

#include "pipeline/family.h"
#include "pipeline/parts/clip_encoder.h"
#include "pipeline/parts/unet_denoiser.h"

namespace ggdiff {

// kohya "lora_unet_*" / PEFT "unet.*" / ComfyUI "diffusion_model.*" over the LDM and the
// diffusers module paths.
LoraTarget unet_lora_target(UNetDenoiser& unet);

// `prefixes` name the encoder in LoRA files: {"te", "text_encoder"} for SD1/SD2's only
// encoder; {"te1", "text_encoder"} and {"te2", "text_encoder_2"} for SDXL's two.
LoraTarget clip_lora_target(ClipTextEncoder& encoder, const std::string& label,
                            std::vector<std::string> prefixes);

}  // namespace ggdiff
