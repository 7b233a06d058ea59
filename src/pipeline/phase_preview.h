// Live previews during the "sampling" phase (--preview, --preview-interval, --preview-noisy),
// as stable-diffusion.cpp makes them: inside the guided evaluation, of the denoised estimate
// (or, with --preview-noisy, of the sampler's input times c_in, what the denoiser is fed), at
// every evaluation of each interval-th step, so a two-evaluation sampler (heun, dpm2, ...)
// previews twice in such a step. A preview is the family's latent-to-RGB projection (proj,
// latent-sized) or a decode of the latent (tae, vae).
#pragma once

#include <functional>
#include <vector>

#include "core/status.h"
#include "image/image.h"
#include "pipeline/family.h"
#include "pipeline/generate_plan.h"
#include "pipeline/options.h"
#include "pipeline/phase_denoise.h"
#include "sampling/samplers.h"

namespace ggdiff {

// The preview of `latent` (the plan's latent shape) as `mode` makes it; of the first frame
// when a latent holds several (Qwen Image Layered). `tiling`: the request's VAE tiling.
Result<Image> make_preview(Family& f, const GeneratePlan& p, PreviewMode mode,
                           const std::vector<float>& latent, const TilingOptions& tiling);

// `denoise` with previews of `mode` (not None) handed to `emit` with the 1-based step, per
// c.options.preview. A preview that fails is logged and sampling goes on.
sampling::DenoiseFn previewing_denoiser(const DenoiseContext& c, sampling::DenoiseFn denoise,
                                        PreviewMode mode,
                                        std::function<void(const Image& preview, int step)> emit);

}  // namespace ggdiff
