// Internal to the samplers: the per-run context the step rules share and the rule entry
// points sample() dispatches to. Not part of the public API.
#pragma once

#include <vector>

#include "sampling/samplers.h"

namespace ggdiff::sampling::detail {

using Vec = std::vector<float>;

class SamplerRun {
  public:
    SamplerRun(const DenoiseFn& denoise, const std::vector<float>& sigmas, Rng& rng, float eta,
               const SamplerOptions& options, size_t n)
        : sigmas(sigmas),
          eta(eta),
          flow(options.model != nullptr && options.model->is_flow()),
          model(options.model),
          n(n),
          denoise_(denoise),
          rng_(rng),
          on_step_(options.on_step) {}

    int steps() const { return static_cast<int>(sigmas.size()) - 1; }
    // D(x, sigma), checked: an error or a wrong-sized result becomes a Status naming the step.
    // `predictor`: the first of the step's two evaluations (DenoiseStep::predictor).
    Result<Vec> denoised(const Vec& x, float sigma, int step, bool predictor = false);
    // D and the unconditional D for CFG++.
    Result<DenoiseResult> denoised_with_uncond(const Vec& x, float sigma, int step);
    // One fresh noise draw the size of the latent.
    Vec noise() { return rng_.randn(n); }
    // Reports progress; an error if the caller cancels.
    Status step_done(int step);

    const std::vector<float>& sigmas;
    const float eta;
    const bool flow;
    const Parameterization* model;
    const size_t n;

  private:
    const DenoiseFn& denoise_;
    Rng& rng_;
    const std::function<bool(int, int)>& on_step_;
};

// Split of one step sigma -> sigma_to into a deterministic move to sigma_down and fresh
// noise of size sigma_up (k-diffusion's get_ancestral_step, or its rectified-flow form,
// where the deterministic part is also rescaled by alpha_scale).
struct AncestralStep {
    float sigma_down;
    float sigma_up;
    float alpha_scale;
};
AncestralStep ancestral_step(float sigma, float sigma_to, float eta, bool flow);

Status run_euler(SamplerRun& run, Vec& x);
Status run_euler_ancestral(SamplerRun& run, Vec& x);  // also ddim_trailing
Status run_heun(SamplerRun& run, Vec& x);
Status run_dpm2(SamplerRun& run, Vec& x);
Status run_euler_cfg_pp(SamplerRun& run, Vec& x);
Status run_euler_ancestral_cfg_pp(SamplerRun& run, Vec& x);
Status run_dpmpp_2s_ancestral(SamplerRun& run, Vec& x);
Status run_dpmpp_2m(SamplerRun& run, Vec& x);
Status run_dpmpp_2m_v2(SamplerRun& run, Vec& x);
Status run_dpmpp_2m_sde(SamplerRun& run, Vec& x);
Status run_ipndm(SamplerRun& run, Vec& x);
Status run_ipndm_v(SamplerRun& run, Vec& x);
Status run_res_multistep(SamplerRun& run, Vec& x);
Status run_res_2s(SamplerRun& run, Vec& x);
Status run_er_sde(SamplerRun& run, Vec& x);
Status run_lcm(SamplerRun& run, Vec& x);
Status run_tcd(SamplerRun& run, Vec& x);

}  // namespace ggdiff::sampling::detail
