// What the families that run FLUX.1's DiT on an LLM's text share (LongCat-Image, Ovis-Image):
// the LLM under text_encoders.llm. as wide as the DiT's txt_in, FLUX.1's 16-channel VAE, the
// Qwen2 tokenizer, and the Family fields that follow from FLUX.1's DiT.
#pragma once

#include <memory>
#include <string>

#include "families/flux/dit.h"
#include "models/te/qwen_llm.h"
#include "models/vae/vae.h"
#include "pipeline/family.h"
#include "tokenizers/qwen2_tokenizer.h"

namespace ggdiff {

struct LlmFluxParts {
    models::QwenLlmConfig llm;
    models::VaeConfig vae;  // latent scale 0.3611, shift 0.1159
    std::shared_ptr<const Qwen2Tokenizer> tokenizer;
};

// Reads and checks the configs before any weight is read; errors say what to pass.
// `encoder` names the text encoder the family needs ("Qwen2.5-VL-7B"), `encoder_file` its
// usual file name.
Result<LlmFluxParts> detect_llm_flux_parts(const FamilyContext& ctx, const models::FluxConfig& dit,
                                           const std::string& encoder,
                                           const std::string& encoder_file);

// The denoiser (FLUX.1's DiT, with its LoRA target) and the VAE into `f`, with the fields that
// follow from the DiT: latent channels, FLUX.1's latent preview, real CFG (no guidance
// embedding), references in multiples of 16, skippable blocks.
Status add_llm_flux_parts(const FamilyContext& ctx, const models::FluxConfig& dit,
                          const LlmFluxParts& parts, Family& f);

}  // namespace ggdiff
