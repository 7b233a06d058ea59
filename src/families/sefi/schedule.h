// SeFi-Image's dual-time sampling, as stable-diffusion.cpp (38a51f81, SefiFlowDenoiser and
// sample_sefi_euler) runs it. The latent's first 16 channels (semantic) run ahead of the other
// 128 (texture, the FLUX.2 VAE's patchified latent): at step i of n, with u = shift(i / n)
// (shift(u) = a u / (1 + (a - 1) u), a = 1 by default) and v = u (1 + delta) (delta 0.1),
// the semantic level is from min(v, 1) and the texture level from clamp(v - delta, 0, 1), each
// as the training timestep index k = int(level * 999) (clamped to 0..999): timestep 1000 - k,
// sigma (1000 - k) / 1000. The texture sigmas are the schedule the generic path sees (the
// noise of the start, the flow scaling undone at the end: 0.001, not 0). Each step evaluates
// the DiT once at (semantic, texture) timesteps, takes the flow velocity
// v = (x - denoised) / texture sigma, and moves the semantic channels by v times the step of
// the semantic sigma and the texture channels by v times the texture sigma's.
// Pure code: the denoiser is a function.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/status.h"
#include "sampling/samplers.h"

namespace ggdiff {

constexpr int64_t kSefiSemanticChannels = 16;
constexpr int64_t kSefiTextureChannels = 128;

struct SefiSchedule {
    // n + 1 entries each: step i's levels, then the final ones.
    std::vector<float> semantic_sigmas, texture_sigmas;
    std::vector<float> semantic_timesteps, texture_timesteps;  // 1000 - k
    int steps() const { return static_cast<int>(texture_sigmas.size()) - 1; }
};

// The schedule of `steps` steps (>= 1) with the reference's defaults (its sefi_alpha and
// sefi_delta_t sampler arguments).
SefiSchedule sefi_schedule(int steps, float alpha = 1.0f, float delta_t = 0.1f);

// Called before each evaluation with the (semantic, texture) timesteps it is for.
using SefiTimestepsFn = std::function<void(float semantic, float texture)>;

// The dual-time Euler loop over `s` on x [w, h, 16 + 128, 1] (flat, `plane` floats a channel):
// `denoise` gets the texture sigma and returns the denoised estimate (c_skip 1, c_out -sigma),
// `set_timesteps` is told each evaluation's timesteps first. `on_step` (steps done, total)
// cancels with false.
Status sefi_euler(const sampling::DenoiseFn& denoise, const SefiTimestepsFn& set_timesteps,
                  std::vector<float>& x, int64_t plane, const SefiSchedule& s,
                  const std::function<bool(int, int)>& on_step = nullptr);

}  // namespace ggdiff
