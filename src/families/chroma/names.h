// Chroma's own tensor names: FLUX.1's (families/flux/names.h) without any modulation linear
// (no time_in, vector_in, guidance_in, img_mod / txt_mod, single-block modulation or final
// adaLN) and with the approximator that computes every modulation instead,
// distilled_guidance_layer.{in_proj, layers.N.{in_layer, out_layer}, norms.N.scale,
// out_proj}. The diffusers ChromaTransformer2DModel form renamed to those names (its
// approximator layers are linear_1 / linear_2 and its norms' ".weight" the original ".scale";
// the blocks as FLUX.1's, q/k/v kept apart), the layout record the registry hands to io
// (bare single files, the diffusers transformer, the diffusers ChromaPipeline folder), and
// the keys LoRA files address the DiT's weights by.
#pragma once

#include <string>
#include <vector>

#include "io/lora_names.h"
#include "io/model_layout.h"
#include "pipeline/family.h"

namespace ggdiff {

class DiffusersChromaMap {
  public:
    // The diffusers form: the approximator (Chroma's alone) next to diffusers-only names, or,
    // in a shard without the approximator, FLUX.1's diffusers blocks without modulation.
    static bool detect(const std::vector<std::string>& names);
    static bool map(const std::string& name, std::string* out);
};

// The LoRA keys of one Chroma DiT weight, by its original path relative to the DiT's prefix
// (ending in ".weight"): FLUX.1's whole-weight keys (kohya "lora_unet_<path>", ComfyUI and
// ai-toolkit "diffusion_model.<path>", the bare path, and the diffusers module under
// "transformer." or bare, as PEFT, OneTrainer and SimpleTuner save it), and for the
// approximator both namings under both prefix families (OneTrainer writes the original
// names under "transformer."). Row keys are FLUX.1's: diffusers to_q / to_k / to_v each patch
// a third of a fused qkv, a single block's q / k / v / proj_mlp their rows of linear1, and a
// fused-form LoRA the split parts of a diffusers-loaded model.
std::vector<std::string> chroma_lora_keys(const std::string& weight);
std::vector<LoraRowKey> chroma_lora_row_keys(const std::string& weight,
                                             const std::vector<int64_t>& shape);

// The Chroma DiT as a LoRA target, its weights declared under `prefix`.
LoraTarget chroma_lora_target(ModuleRunner& runner, const std::string& prefix);

// Bare Chroma DiTs (original names, with or without "model.diffusion_model."), the diffusers
// ChromaTransformer2DModel and the diffusers Chroma pipelines (transformer/, vae/, and one
// T5 text_encoder/). Listed ahead of FLUX.1's layout, whose diffusers detection a Chroma
// transformer also satisfies.
extern const ModelLayout kChromaLayout;

}  // namespace ggdiff
