// Krea2's file names. The checkpoint's own names (first, tmlp, tproj, txtfusion, txtmlp,
// blocks.N, last) under "model.diffusion_model." are canonical, as stable-diffusion.cpp reads
// them; a DiT file alone (those names bare) is filed there. Its diffusers form (img_in,
// time_embed, time_mod_proj, txt_in, text_fusion, transformer_blocks.N with attn.to_q / to_k /
// to_v / to_gate / to_out.0 and ff.gate / up / down, final_layer) is renamed as the reference
// renames it.
//
// LoRA keys of a weight: kohya ("lora_unet_blocks_0_attn_wq"), ComfyUI
// ("diffusion_model.blocks.0.attn.wq") and bare original names, and the diffusers / PEFT names
// ("transformer.transformer_blocks.0.attn.to_q", "base_model.model.transformer_blocks...").
#pragma once

#include <string>
#include <vector>

#include "io/model_layout.h"
#include "pipeline/family.h"
#include "runtime/module_runner.h"

namespace ggdiff {

extern const ModelLayout kKrea2Layout;

// A diffusers Krea2 name (relative to the DiT) -> the original one; false: not renamed.
bool krea2_diffusers_to_original(const std::string& name, std::string* out);

// The LoRA keys of a Krea2 weight named relative to model.diffusion_model.
// ("blocks.0.attn.wq.weight").
std::vector<std::string> krea2_lora_keys(const std::string& weight);

LoraTarget krea2_lora_target(ModuleRunner& runner);

}  // namespace ggdiff
