// Phase "text": the prompt (without its LoRA tags) and, when CFG is used, the negative prompt
// through the family's text conditioner, once per generation; every batch item and step
// shares the result. The phase ends the conditioner's phase (its weights may be released).
#pragma once

#include <string>

#include "core/status.h"
#include "pipeline/family.h"
#include "pipeline/generate_plan.h"
#include "pipeline/options.h"

namespace ggdiff {

// What the text phase produces.
struct TextConditions {
    Conditioning cond;
    Conditioning uncond;  // the negative prompt's; empty when the plan uses no CFG
    // The negative prompt's without the reference images (plan.use_img_uncond only).
    Conditioning img_uncond;
};

// Encodes `prompt` (the request's prompt without its <lora:...> tags) and, with
// plan.use_uncond, o.negative_prompt.
Result<TextConditions> encode_text(Family& f, const GeneratePlan& plan, const GenerateOptions& o,
                                   const std::string& prompt);

}  // namespace ggdiff
