// Guidance: how the conditional and unconditional model outputs are combined before they
// become the denoised estimate. Applied by the pipeline to raw model outputs (eps / v /
// flow velocity), as stable-diffusion.cpp does, then turned into D with apply_scalings.
#pragma once

#include <cstddef>
#include <vector>

#include "sampling/samplers.h"

namespace ggdiff::sampling {

// Classifier-free guidance: out = uncond + scale * (cond - uncond).
void apply_cfg(const std::vector<float>& cond, const std::vector<float>& uncond, float scale,
               std::vector<float>& out);

// Three-way guidance for edit models (InstructPix2Pix, and reference-image DiTs):
// out = img_uncond + img_scale * (uncond - img_uncond) + txt_scale * (cond - uncond), where
// cond has prompt+image, uncond has negative prompt+image, img_uncond has neither image.
// img_scale == 1 reduces to apply_cfg.
void apply_img_cfg(const std::vector<float>& cond, const std::vector<float>& uncond,
                   const std::vector<float>& img_uncond, float txt_scale, float img_scale,
                   std::vector<float>& out);

// Skip-layer guidance for DiT models (--slg-scale, --skip-layers, --skip-layer-start/end):
// the model is run once more with `layers` skipped and the guided output is pushed away
// from that prediction.
struct SlgParams {
    float scale = 0.0f;  // 0 disables
    std::vector<int> layers = {7, 8, 9};
    float start = 0.01f;  // fraction of the schedule where it begins
    float end = 0.2f;     // and where it stops
    // Whether sampler step `step` (0-based) of a schedule with `schedule_size` sigmas gets
    // the extra pass. Same window as stable-diffusion.cpp, which counts steps from 1 and
    // compares against int(fraction * number of sigmas), both bounds exclusive.
    bool active(int step, size_t schedule_size) const;
    // Whether the evaluation `at` gets the extra pass: an active step, and not the step's
    // predictor evaluation (DenoiseStep::predictor), as in stable-diffusion.cpp.
    bool applies(DenoiseStep at, size_t schedule_size) const {
        return !at.predictor && active(at.index, schedule_size);
    }
};
// out += scale * (cond - skip_cond)
void apply_slg(const std::vector<float>& cond, const std::vector<float>& skip_cond, float scale,
               std::vector<float>& out);

// Everything a request carries about guidance.
struct GuidanceParams {
    float txt_cfg = 7.0f;             // --cfg-scale
    float img_cfg = -1.0f;            // --img-cfg-scale; < 0 means "same as txt_cfg"
    float distilled_guidance = 3.5f;  // --guidance, passed to guidance-distilled models
    SlgParams slg;
    float effective_img_cfg() const { return img_cfg < 0.0f ? txt_cfg : img_cfg; }
};

}  // namespace ggdiff::sampling
