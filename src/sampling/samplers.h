// Samplers: integrate a model's denoiser from the first sigma of a schedule down to the
// last, in place on a flat latent. The update rules are k-diffusion's as
// stable-diffusion.cpp implements them (same operation order, same RNG draws), so a
// pipeline driving the same model reproduces its images.
//
// Conventions every sampler shares:
//   - x holds the latent at sigmas[0] on entry (already noised, see
//     Parameterization::noise_latent) and the sample at sigmas.back() on return;
//   - the DenoiseFn gets x at noise level sigma and returns the guided denoised estimate
//     D(x, sigma) (guidance applied by the caller); `at` says where in the loop it is
//     asked (DenoiseStep): samplers with two evaluations per step (heun, dpm2, dpm++2s_a,
//     res_2s) call it twice with the same step, the first time as the predictor;
//   - noise comes from `rng` with one randn(x.size()) per noise injection, so with
//     stable-diffusion.cpp's single generator the draws continue after the initial latent
//     noise (counter offsets 1, 2, ... for cuda).
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "sampling/parameterization.h"
#include "sampling/rng.h"
#include "sampling/schedules.h"

namespace ggdiff::sampling {

enum class SamplerKind {
    Euler,
    EulerA,
    Heun,
    Dpm2,
    Dpmpp2sA,
    Dpmpp2m,
    Dpmpp2mV2,
    Dpmpp2mSde,
    Ipndm,
    IpndmV,
    Lcm,
    DdimTrailing,
    Tcd,
    ResMultistep,
    Res2s,
    ErSde,
    EulerCfgPp,
    EulerACfgPp
};

// CLI names ("euler_a", "dpm++2m", ...), A1111 names ("Euler a", "DPM++ 2M SDE", ...) and
// k-diffusion/NovelAI style names ("k_dpmpp_2m_sde", "dpmpp_2m", "euler_ancestral"),
// case-insensitive.
Result<SamplerKind> parse_sampler(const std::string& name);
const char* sampler_cli_name(SamplerKind kind);
const char* sampler_a1111_name(SamplerKind kind);
// The other spellings parse_sampler accepts for a sampler (k-diffusion names, ...).
std::vector<std::string> sampler_aliases(SamplerKind kind);
std::vector<std::string> sampler_names();  // CLI names, in enum order
std::vector<SamplerKind> all_samplers();

// The eta a sampler uses when none is given (MISSION.md): 1 for the ancestral/SDE ones.
float default_eta(SamplerKind kind);
// Whether eta changes what the sampler does at all.
bool uses_eta(SamplerKind kind);
// Whether each step injects fresh noise with the default eta.
bool is_stochastic(SamplerKind kind);
// Whether the DenoiseFn must also return the unconditional denoised estimate (CFG++).
bool needs_uncond(SamplerKind kind);
// The schedule stable-diffusion.cpp picks when none is given: lcm for lcm/tcd, simple for
// ddim_trailing, exponential for EDM-v models, discrete otherwise.
ScheduleKind default_schedule(SamplerKind kind, const Parameterization& model);

struct DenoiseResult {
    std::vector<float> denoised;
    std::vector<float> uncond_denoised;  // only when asked (CFG++ samplers)
};

// Where in the sampler loop an evaluation is asked for.
struct DenoiseStep {
    int index = 0;  // the 0-based sampler step
    // The first of a step's two evaluations (heun, dpm2, res_2s, dpm++2s_a; not the flow
    // dpm++2s_a's single evaluation at sigma 1), whose estimate only predicts where the
    // step's final evaluation is taken; it is one even on a last step that stops there.
    // stable-diffusion.cpp applies no skip-layer guidance to it (it passes such steps
    // negated), so neither does the pipeline (SlgParams::applies).
    bool predictor = false;
};

// x at noise level sigma -> denoised prediction. `need_uncond` asks for uncond_denoised too.
using DenoiseFn = std::function<Result<DenoiseResult>(const std::vector<float>& x, float sigma,
                                                      DenoiseStep at, bool need_uncond)>;

struct SamplerOptions {
    float eta = NAN;    // NAN: the sampler's default_eta
    uint64_t seed = 0;  // reserved for noise samplers keyed by seed (Brownian tree)
    // Called after each completed step with (steps done, total steps); false cancels.
    std::function<bool(int step, int total)> on_step;
    // The model's parameterization: flow models switch euler_a, dpm++2s_a, lcm, res_*,
    // er_sde to their flow forms; tcd reads the training table. nullptr = non-flow, SD1
    // table.
    const Parameterization* model = nullptr;
};

// Runs `kind` over `sigmas` (at least one step, finite, >= 0, non-increasing, > 0 before
// the last), updating x in place. Rejects bad inputs and a failing/ill-sized denoiser with
// a message that names the problem; x is unspecified after an error.
Status sample(SamplerKind kind, const DenoiseFn& denoise, std::vector<float>& x,
              const std::vector<float>& sigmas, Rng& rng, const SamplerOptions& options = {});

}  // namespace ggdiff::sampling
