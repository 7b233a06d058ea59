// Phase "sampling" (the guided denoise): each batch item's sampler loop from its starting
// latent to the clean latent. It owns the guided evaluation D(x, sigma) the samplers call:
// the conditional and unconditional denoiser runs (batched into one call when their
// conditionings' shapes agree), CFG, skip-layer guidance (an extra run on the steps of its
// window), the parameterization's scalings and the inpainting blend, and step caching (a
// condition's output reused, or the whole evaluation forecast); the sampler loop itself is
// sampling::sample.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "core/status.h"
#include "pipeline/family.h"
#include "pipeline/generate_plan.h"
#include "pipeline/options.h"
#include "pipeline/phase_inputs.h"
#include "pipeline/phase_text.h"
#include "sampling/rng.h"
#include "sampling/samplers.h"
#include "sampling/step_cache.h"

namespace ggdiff {

// What the denoise phase reads; every item of a generation shares it.
struct DenoiseContext {
    Family& family;
    const GeneratePlan& plan;
    const GenerateOptions& options;
    const TextConditions& text;
    const DenoiseInputs& inputs;
    // Step caching (--cache-mode), or null: guided_denoiser asks it before each denoiser
    // run and denoise_item restarts it for each item and logs how many steps it skipped.
    sampling::StepCache* cache = nullptr;
    // The denoiser to run (the high-noise expert), or null: the family's.
    Denoiser* denoiser = nullptr;
    // The sampler's eta, or unset: --eta.
    std::optional<float> eta = std::nullopt;
};

// The guided denoised estimate D(x, sigma) of `c` (and the unconditional one when the sampler
// asks for it). `c` must outlive the function.
sampling::DenoiseFn guided_denoiser(const DenoiseContext& c);

// The samplers' eta: the context's, else --eta, else the family's default (NAN: each
// sampler's own).
float sampler_eta(const DenoiseContext& c);

// The latent an item's sampling starts from: the init latent (none: zeros) noised to the
// first sigma with noise drawn from `rng`.
std::vector<float> starting_latent(const DenoiseContext& c, sampling::Rng& rng);

// The sampler loop of one item: `x` from the first sigma to the last (the clean latent, the
// noise scaling undone when `finish`; a high-noise expert's part stops at a noisy one).
// `sigmas`: the steps to take, when not the inputs' (the model's part after an expert's).
// `sampler_rng` feeds ancestral and SDE samplers; `seed` is the item's; `on_step` gets (steps
// done, total) after each step and cancels with false.
Status denoise_item(const DenoiseContext& c, const sampling::DenoiseFn& denoise,
                    std::vector<float>& x, sampling::Rng& sampler_rng, int64_t seed,
                    std::function<bool(int step, int total)> on_step, bool finish = true,
                    const std::vector<float>* sigmas = nullptr);

}  // namespace ggdiff
