// Input validation and dispatch for sample(); the step rules live in samplers_*.cpp.
#include <algorithm>
#include <cmath>
#include <string>

#include "sampling/sampler_impl.h"

namespace ggdiff::sampling {

namespace detail {

Result<Vec> SamplerRun::denoised(const Vec& x, float sigma, int step, bool predictor) {
    auto r = denoise_(x, sigma, DenoiseStep{step, predictor}, false);
    if (!r.ok()) return r.status().with_context("denoiser failed at step " + std::to_string(step));
    if (r->denoised.size() != n)
        return Status::Error("denoiser returned " + std::to_string(r->denoised.size()) +
                             " values at step " + std::to_string(step) + ", expected " +
                             std::to_string(n));
    return std::move(r->denoised);
}

Result<DenoiseResult> SamplerRun::denoised_with_uncond(const Vec& x, float sigma, int step) {
    auto r = denoise_(x, sigma, DenoiseStep{step, false}, true);
    if (!r.ok()) return r.status().with_context("denoiser failed at step " + std::to_string(step));
    if (r->denoised.size() != n || r->uncond_denoised.size() != n)
        return Status::Error("denoiser returned " + std::to_string(r->denoised.size()) +
                             " denoised and " + std::to_string(r->uncond_denoised.size()) +
                             " unconditional values at step " + std::to_string(step) +
                             ", expected " + std::to_string(n) + " of each (CFG++ needs both)");
    return std::move(r.value());
}

Status SamplerRun::step_done(int step) {
    if (on_step_ && !on_step_(step + 1, steps()))
        return Status::Error("sampling cancelled after step " + std::to_string(step + 1) + "/" +
                             std::to_string(steps()));
    return Status::Ok();
}

AncestralStep ancestral_step(float sigma, float sigma_to, float eta, bool flow) {
    if (!flow) {
        float sigma_up = 0.0f;
        float sigma_down = sigma_to;
        if (eta <= 0.0f) return {sigma_down, sigma_up, 1.0f};
        const float from_sq = sigma * sigma;
        const float to_sq = sigma_to * sigma_to;
        if (from_sq > 0.0f) {
            const float term = to_sq * (from_sq - to_sq) / from_sq;
            sigma_up = std::min(sigma_to, eta * std::sqrt(std::max(term, 0.0f)));
        }
        const float down_sq = to_sq - sigma_up * sigma_up;
        sigma_down = down_sq > 0.0f ? std::sqrt(down_sq) : 0.0f;
        return {sigma_down, sigma_up, 1.0f};
    }
    // Rectified flow: x_s = (1 - s) x0 + s n. Step deterministically to sigma_down, then
    // rescale the data part by alpha_scale and add noise so the marginal at sigma_to is
    // right. eta > 1 has no valid split here, so it is capped.
    if (eta <= 0.0f || sigma <= 0.0f || sigma_to <= 0.0f) return {sigma_to, 0.0f, 1.0f};
    eta = std::min(eta, 1.0f);
    const float ratio = sigma_to / sigma;
    float sigma_down = sigma_to * (1.0f + (ratio - 1.0f) * eta);
    sigma_down = std::max(0.0f, std::min(sigma_to, sigma_down));
    const float denom = 1.0f - sigma_down;
    if (denom <= 0.0f) return {sigma_to, 0.0f, 1.0f};
    const float alpha_scale = (1.0f - sigma_to) / denom;
    float term = (sigma_down / sigma_to) * alpha_scale;
    term = std::max(-1.0f, std::min(1.0f, term));
    const float sigma_up = sigma_to * std::sqrt(std::max(1.0f - term * term, 0.0f));
    return {sigma_down, sigma_up, alpha_scale};
}

}  // namespace detail

namespace {

Status validate_sigmas(const std::vector<float>& sigmas) {
    if (sigmas.size() < 2)
        return Status::Error("sigmas must hold at least 2 values (one step), got " +
                             std::to_string(sigmas.size()));
    for (size_t i = 0; i < sigmas.size(); ++i) {
        const float s = sigmas[i];
        const std::string at = "sigmas[" + std::to_string(i) + "]";
        if (!std::isfinite(s)) return Status::Error(at + " is not finite");
        if (s < 0.0f) return Status::Error(at + " is negative (" + std::to_string(s) + ")");
        if (i + 1 < sigmas.size() && s == 0.0f)
            return Status::Error(at + " is 0 before the last step; only the final sigma may be 0");
        if (i > 0 && s > sigmas[i - 1])
            return Status::Error(at + " = " + std::to_string(s) + " is larger than the previous " +
                                 std::to_string(sigmas[i - 1]) + "; sigmas must not increase");
    }
    return Status::Ok();
}

Result<float> resolve_eta(SamplerKind kind, float eta) {
    if (std::isnan(eta)) return default_eta(kind);
    if (!uses_eta(kind)) return eta;  // ignored, like every other setting it does not read
    if (!std::isfinite(eta) || eta < 0.0f)
        return Status::Error(std::string("eta must be a finite value >= 0 for ") +
                             sampler_cli_name(kind) + " (got " + std::to_string(eta) + ")");
    if (kind == SamplerKind::Tcd && eta > 1.0f)
        return Status::Error("eta (gamma) must be in [0, 1] for tcd (got " + std::to_string(eta) +
                             ")");
    return eta;
}

}  // namespace

Status sample(SamplerKind kind, const DenoiseFn& denoise, std::vector<float>& x,
              const std::vector<float>& sigmas, Rng& rng, const SamplerOptions& options) {
    const std::string name = sampler_cli_name(kind);
    if (!denoise) return Status::Error(name + ": no denoiser given");
    if (x.empty()) return Status::Error(name + ": the latent is empty");
    for (size_t i = 0; i < x.size(); ++i)
        if (!std::isfinite(x[i]))
            return Status::Error(name + ": the initial latent has a non-finite value at " +
                                 std::to_string(i));
    GGDIFF_TRY(validate_sigmas(sigmas).with_context(name));
    auto eta = resolve_eta(kind, options.eta);
    if (!eta.ok()) return eta.status().with_context(name);

    detail::SamplerRun run(denoise, sigmas, rng, *eta, options, x.size());
    Status st;
    switch (kind) {
        case SamplerKind::Euler:
            st = detail::run_euler(run, x);
            break;
        case SamplerKind::EulerA:
            st = detail::run_euler_ancestral(run, x);
            break;
        case SamplerKind::Heun:
            st = detail::run_heun(run, x);
            break;
        case SamplerKind::Dpm2:
            st = detail::run_dpm2(run, x);
            break;
        case SamplerKind::Dpmpp2sA:
            st = detail::run_dpmpp_2s_ancestral(run, x);
            break;
        case SamplerKind::Dpmpp2m:
            st = detail::run_dpmpp_2m(run, x);
            break;
        case SamplerKind::Dpmpp2mV2:
            st = detail::run_dpmpp_2m_v2(run, x);
            break;
        case SamplerKind::Dpmpp2mSde:
            st = detail::run_dpmpp_2m_sde(run, x);
            break;
        case SamplerKind::Ipndm:
            st = detail::run_ipndm(run, x);
            break;
        case SamplerKind::IpndmV:
            st = detail::run_ipndm_v(run, x);
            break;
        case SamplerKind::Lcm:
            st = detail::run_lcm(run, x);
            break;
        // DDIM with "trailing" timesteps is Euler-ancestral on the simple schedule; eta
        // plays DDIM's eta.
        case SamplerKind::DdimTrailing:
            st = detail::run_euler_ancestral(run, x);
            break;
        case SamplerKind::Tcd:
            st = detail::run_tcd(run, x);
            break;
        case SamplerKind::ResMultistep:
            st = detail::run_res_multistep(run, x);
            break;
        case SamplerKind::Res2s:
            st = detail::run_res_2s(run, x);
            break;
        case SamplerKind::ErSde:
            st = detail::run_er_sde(run, x);
            break;
        case SamplerKind::EulerCfgPp:
            st = detail::run_euler_cfg_pp(run, x);
            break;
        case SamplerKind::EulerACfgPp:
            st = detail::run_euler_ancestral_cfg_pp(run, x);
            break;
    }
    return st.with_context(name);
}

}  // namespace ggdiff::sampling
