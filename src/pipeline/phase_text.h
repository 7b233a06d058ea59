// Phase "text": the prompt (without its LoRA tags) and, when CFG is used, the negative prompt
// through the family's text conditioner, once per generation; every batch item and step
// shares the result. The phase ends the conditioner's phase (its weights may be released).
#pragma once

#include <string>

#include "core/status.h"
#include "pipeline/family.h"
#include "pipeline/generate_plan.h"
#include "pipeline/options.h"
#include "sampling/samplers.h"

namespace ggdiff {

// What the text phase produces.
struct TextConditions {
    Conditioning cond;
    Conditioning uncond;  // the negative prompt's; empty when the plan uses no CFG
    // The negative prompt's without the reference images (plan.use_img_uncond only).
    Conditioning img_uncond;
    // Identity conditioning (Family::id_conditions) and the step after which it replaces
    // `cond` (IdConditions::after_step); -1: none.
    Conditioning id_cond;
    int id_after_step = -1;
    // The positive conditioning of an evaluation.
    const Conditioning& positive(const sampling::DenoiseStep& at) const {
        return id_after_step >= 0 && !at.predictor && at.index + 1 > id_after_step ? id_cond : cond;
    }
};

// Encodes `prompt` (the request's prompt without its <lora:...> tags) and, with
// plan.use_uncond, o.negative_prompt.
Result<TextConditions> encode_text(Family& f, const GeneratePlan& plan, const GenerateOptions& o,
                                   const std::string& prompt);

}  // namespace ggdiff
