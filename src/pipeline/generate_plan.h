// The plan of a generate() call: the request checked before any compute (sizes, steps,
// strength, which images the family takes, the prompts' limits) and every default filled
// in and every name parsed (size, CFG scale, sampler, schedule and its sigmas, RNGs, latent
// shape). The phases (phase_*.h) read it and never change it; a later pass over the same
// request (hires fix) gets its own plan.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "core/status.h"
#include "pipeline/family.h"
#include "pipeline/options.h"
#include "sampling/guidance.h"
#include "sampling/parameterization.h"
#include "sampling/rng.h"
#include "sampling/samplers.h"
#include "sampling/schedules.h"
#include "sampling/step_cache.h"

namespace ggdiff {

// A request with every default filled in and every name parsed.
struct GeneratePlan {
    int width = 0, height = 0;
    float cfg_scale = 7.0f;
    bool use_uncond = false;
    // --img-cfg-scale of a model given reference images (FLUX.1 Kontext, FLUX.2, Qwen Image
    // Edit): 1 (the default) is plain CFG; otherwise a third pass without the references
    // (img_uncond) joins the guidance, as stable-diffusion.cpp's 3-conditioning CFG.
    float img_cfg = 1.0f;
    bool use_img_uncond = false;
    sampling::SamplerKind sampler = sampling::SamplerKind::EulerA;
    std::optional<sampling::ScheduleKind> schedule;  // unset with --sigmas
    sampling::RngKind rng = sampling::RngKind::Cuda;
    sampling::RngKind sampler_rng = sampling::RngKind::Cuda;
    // The family's parameterization with --flow-shift applied (flow models only).
    sampling::Parameterization param = sampling::Parameterization::discrete();
    std::vector<float> sigmas;
    // Skip-layer guidance as requested; checked against the family (scale 0: off).
    sampling::SlgParams slg;
    int64_t latent_w = 0, latent_h = 0, latent_c = 0;
    int frames = 1;  // images per latent (layers)
    // Step caching with --cache-option applied and checked (mode None: off).
    sampling::CacheParams cache;
    // The high-noise expert's first steps (Family::high_noise): how many of `sigmas`' steps
    // it samples, and its plan (its sampler, CFG and eta; the same schedule). 0 / null: none.
    int high_noise_steps = 0;
    std::shared_ptr<const GeneratePlan> high_noise;
    std::optional<float> high_noise_eta;

    // Floats in one latent pixel plane, and in the whole latent (every channel and frame).
    size_t latent_plane() const { return static_cast<size_t>(latent_w * latent_h); }
    size_t latent_numel() const { return static_cast<size_t>(latent_w * latent_h * latent_c); }
};

// Checks `o` for family `f` and fills in its defaults; errors name the flag at fault.
Result<GeneratePlan> plan_request(const GenerateOptions& o, const Family& f);

// --skip-layer-start <= --skip-layer-end, both in [0, 1] (any family; the rest of the
// skip-layer checks need the family and are plan_request's).
Status check_slg_window(const sampling::SlgParams& slg);

// The sigmas of `steps` steps for a width x height image: --scheduler, else the sampler's and
// the family's default schedule (set in p.schedule); p's sampler and parameterization must be
// filled in.
Result<std::vector<float>> schedule_sigmas(const GenerateOptions& o, const Family& f,
                                           GeneratePlan& p, int steps, int width, int height);

// Images each latent of a request decodes to (Qwen Image Layered: one per layer).
int latent_frames(const Family& f, const GenerateOptions& o);

// The RNGs of one replica's generation: `noise` draws each item's initial noise and the VAE
// posterior samples, `sampler` the noise of ancestral and SDE samplers (the same object
// unless --sampler-rng names another kind).
struct GenerationRngs {
    std::shared_ptr<sampling::Rng> noise, sampler;

    // Both seeded with the request's seed.
    static GenerationRngs make(const GeneratePlan& p, int64_t seed);
    // Restarts both at `seed` (each batch item has its own).
    void reseed(int64_t seed);
};

}  // namespace ggdiff
