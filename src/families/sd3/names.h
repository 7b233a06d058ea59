// SD3 / SD3.5's own tensor names: the original MMDiT names ("joint_blocks.N.x_block...",
// bare or under "model.diffusion_model."), the diffusers SD3Transformer2DModel form renamed
// to them (split q/k/v kept apart as attn.q / attn.k / attn.v), the layout record the
// registry hands to io, and the keys LoRA files address the MMDiT's weights by.
#pragma once

#include <string>
#include <vector>

#include "io/lora_names.h"
#include "io/model_layout.h"
#include "pipeline/family.h"

namespace ggdiff {

// diffusers SD3Transformer2DModel -> original names. q, k and v stay separate
// ("x_block.attn.q", "context_block.attn.k", "x_block.attn2.v"). diffusers' final norm
// (norm_out, an AdaLayerNormContinuous) and the last block's context norm (norm1_context of
// the pre-only block, the same kind) store their projection as (scale, shift), the original
// as (shift, scale): those keep names of their own, "final_layer.adaLN_scale_shift" and
// "joint_blocks.<last>.context_block.adaLN_scale_shift", which the MMDiT reads as such.
class DiffusersSd3Map {
  public:
    static bool detect(const std::vector<std::string>& names);
    // The last block is the highest "transformer_blocks.N." among the names.
    explicit DiffusersSd3Map(const std::vector<std::string>& names);
    bool map(const std::string& name, std::string* out) const;

  private:
    int last_block_ = -1;
};

// The LoRA keys of one MMDiT weight, by its path relative to "model.diffusion_model."
// (ending in ".weight") and its torch shape: whole-weight keys (kohya "lora_unet_<path>",
// ComfyUI "diffusion_model.<path>", the bare path, and the diffusers module path under
// "transformer." or bare, as PEFT saves it), and row keys where the two forms cut the
// weight differently: diffusers to_q / to_k / to_v (add_*_proj, attn2.*) each patch a third
// of a fused attn.qkv, a fused-form LoRA patches split attn.q / attn.k / attn.v a third of
// its output each, and diffusers' (scale, shift) norms land swapped on the original
// (shift, scale) adaLN_modulation.1.
std::vector<std::string> sd3_lora_keys(const std::string& weight);
std::vector<LoraRowKey> sd3_lora_row_keys(const std::string& weight,
                                          const std::vector<int64_t>& shape);

// The MMDiT as a LoRA target (its weights are declared under "model.diffusion_model.").
LoraTarget sd3_lora_target(ModuleRunner& runner);

// Bare SD3 MMDiTs and the diffusers StableDiffusion3 pipelines.
extern const ModelLayout kSd3Layout;

}  // namespace ggdiff
