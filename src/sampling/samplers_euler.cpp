// Euler-family step rules: first/second-order steps on the probability-flow ODE
// dx/dsigma = (x - D(x, sigma)) / sigma, their ancestral (noise-injecting) forms, and CFG++.
#include <cmath>

#include "sampling/sampler_impl.h"

namespace ggdiff::sampling::detail {

Status run_euler(SamplerRun& run, Vec& x) {
    const auto& s = run.sigmas;
    for (int i = 0; i < run.steps(); ++i) {
        const float sigma = s[i];
        auto d_or = run.denoised(x, sigma, i);
        if (!d_or.ok()) return d_or.status();
        const Vec& den = *d_or;
        const float dt = s[i + 1] - sigma;
        for (size_t j = 0; j < run.n; ++j) {
            const float d = (x[j] - den[j]) / sigma;
            x[j] = x[j] + d * dt;
        }
        GGDIFF_TRY(run.step_done(i));
    }
    return Status::Ok();
}

Status run_euler_ancestral(SamplerRun& run, Vec& x) {
    const auto& s = run.sigmas;
    for (int i = 0; i < run.steps(); ++i) {
        const float sigma = s[i];
        const float sigma_to = s[i + 1];
        auto d_or = run.denoised(x, sigma, i);
        if (!d_or.ok()) return d_or.status();
        const Vec& den = *d_or;
        if (sigma_to == 0.0f) {
            x = den;  // the Euler step to sigma 0 lands exactly on D
        } else if (run.eta == 0.0f) {
            // Deterministic: DDIM's move along the line from D through x.
            const float r = sigma_to / sigma;
            for (size_t j = 0; j < run.n; ++j) x[j] = r * x[j] + (1.0f - r) * den[j];
        } else {
            const AncestralStep a = ancestral_step(sigma, sigma_to, run.eta, run.flow);
            const float r = a.sigma_down / sigma;
            for (size_t j = 0; j < run.n; ++j) x[j] = r * x[j] + (1.0f - r) * den[j];
            if (a.sigma_up > 0.0f) {
                const Vec z = run.noise();
                for (size_t j = 0; j < run.n; ++j) {
                    if (run.flow) x[j] *= a.alpha_scale;
                    x[j] += z[j] * a.sigma_up;
                }
            }
        }
        GGDIFF_TRY(run.step_done(i));
    }
    return Status::Ok();
}

Status run_heun(SamplerRun& run, Vec& x) {
    const auto& s = run.sigmas;
    Vec d(run.n), x2(run.n);
    for (int i = 0; i < run.steps(); ++i) {
        auto d_or = run.denoised(x, s[i], i, true);
        if (!d_or.ok()) return d_or.status();
        for (size_t j = 0; j < run.n; ++j) d[j] = (x[j] - (*d_or)[j]) / s[i];
        const float dt = s[i + 1] - s[i];
        if (s[i + 1] == 0.0f) {
            for (size_t j = 0; j < run.n; ++j) x[j] += d[j] * dt;  // no slope at sigma 0
        } else {
            for (size_t j = 0; j < run.n; ++j) x2[j] = x[j] + d[j] * dt;
            auto d2_or = run.denoised(x2, s[i + 1], i);
            if (!d2_or.ok()) return d2_or.status();
            for (size_t j = 0; j < run.n; ++j) {
                const float slope = (d[j] + (x2[j] - (*d2_or)[j]) / s[i + 1]) / 2.0f;
                x[j] += slope * dt;
            }
        }
        GGDIFF_TRY(run.step_done(i));
    }
    return Status::Ok();
}

Status run_dpm2(SamplerRun& run, Vec& x) {
    const auto& s = run.sigmas;
    Vec d(run.n), x2(run.n);
    for (int i = 0; i < run.steps(); ++i) {
        auto d_or = run.denoised(x, s[i], i, true);
        if (!d_or.ok()) return d_or.status();
        for (size_t j = 0; j < run.n; ++j) d[j] = (x[j] - (*d_or)[j]) / s[i];
        if (s[i + 1] == 0.0f) {
            const float dt = s[i + 1] - s[i];
            for (size_t j = 0; j < run.n; ++j) x[j] += d[j] * dt;
        } else {
            // Midpoint in log sigma: evaluate the slope there, step the whole way with it.
            const float sigma_mid = std::exp(0.5f * (std::log(s[i]) + std::log(s[i + 1])));
            const float dt_1 = sigma_mid - s[i];
            const float dt_2 = s[i + 1] - s[i];
            for (size_t j = 0; j < run.n; ++j) x2[j] = x[j] + d[j] * dt_1;
            auto d2_or = run.denoised(x2, sigma_mid, i);
            if (!d2_or.ok()) return d2_or.status();
            for (size_t j = 0; j < run.n; ++j) x[j] += ((x2[j] - (*d2_or)[j]) / sigma_mid) * dt_2;
        }
        GGDIFF_TRY(run.step_done(i));
    }
    return Status::Ok();
}

// CFG++ (Chung et al. 2024): step along the unconditional direction but re-anchor on the
// guided D, which keeps low guidance scales on the data manifold.
Status run_euler_cfg_pp(SamplerRun& run, Vec& x) {
    const auto& s = run.sigmas;
    for (int i = 0; i < run.steps(); ++i) {
        auto r = run.denoised_with_uncond(x, s[i], i);
        if (!r.ok()) return r.status();
        for (size_t j = 0; j < run.n; ++j) {
            const float d = (x[j] - r->uncond_denoised[j]) / s[i];
            x[j] = r->denoised[j] + d * s[i + 1];
        }
        GGDIFF_TRY(run.step_done(i));
    }
    return Status::Ok();
}

Status run_euler_ancestral_cfg_pp(SamplerRun& run, Vec& x) {
    const auto& s = run.sigmas;
    for (int i = 0; i < run.steps(); ++i) {
        auto r = run.denoised_with_uncond(x, s[i], i);
        if (!r.ok()) return r.status();
        const AncestralStep a = ancestral_step(s[i], s[i + 1], run.eta, false);
        for (size_t j = 0; j < run.n; ++j) {
            const float d = (x[j] - r->uncond_denoised[j]) / s[i];
            x[j] = r->denoised[j] + d * a.sigma_down;
        }
        // Drawn even when sigma_up is 0 (eta 0) so the stream stays in step with sd.cpp.
        if (s[i + 1] > 0.0f) {
            const Vec z = run.noise();
            for (size_t j = 0; j < run.n; ++j) x[j] += z[j] * a.sigma_up;
        }
        GGDIFF_TRY(run.step_done(i));
    }
    return Status::Ok();
}

}  // namespace ggdiff::sampling::detail
