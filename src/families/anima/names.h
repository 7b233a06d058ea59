// Anima's own tensor names: the original Cosmos-Predict2 names under "net." (the layout of
// CircleStone's split file and its GGUF conversions) are canonical; a file whose names lack
// the "net." wrapper (x_embedder.*, blocks.N.*, llm_adapter.* at the top) gets it. The LoRA
// keys of its weights: kohya ("lora_unet_blocks_0_self_attn_q_proj"), ComfyUI
// ("diffusion_model.blocks.0..."), bare and PEFT ("transformer.blocks.0...") names, each with
// or without "net.".
#pragma once

#include <string>
#include <vector>

#include "io/model_layout.h"
#include "pipeline/family.h"
#include "runtime/module_runner.h"

namespace ggdiff {

extern const ModelLayout kAnimaLayout;

// The LoRA keys of an Anima weight, named relative to the DiT ("net.blocks.0....weight").
std::vector<std::string> anima_lora_keys(const std::string& weight);

// The LoRA target of a runner holding Anima weights under `dit_prefix` ("model.diffusion_model.").
LoraTarget anima_lora_target(ModuleRunner& runner, const char* label,
                             const std::string& dit_prefix);

}  // namespace ggdiff
