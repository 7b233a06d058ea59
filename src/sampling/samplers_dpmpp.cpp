// DPM-Solver++ step rules (Lu et al., arXiv:2211.01095) in k-diffusion's form: exponential
// integrators in t = -log(sigma) that treat the linear part of the ODE exactly and
// extrapolate D, singlestep (2S) or multistep (2M).
#include <algorithm>
#include <cmath>

#include "sampling/sampler_impl.h"

namespace ggdiff::sampling::detail {

namespace {
float t_of(float sigma) {
    return -std::log(sigma);
}
float sigma_of(float t) {
    return std::exp(-t);
}
}  // namespace

static Status dpmpp_2s_ancestral_flow(SamplerRun& run, Vec& x);

Status run_dpmpp_2s_ancestral(SamplerRun& run, Vec& x) {
    if (run.flow) return dpmpp_2s_ancestral_flow(run, x);
    const auto& s = run.sigmas;
    Vec x2(run.n);
    for (int i = 0; i < run.steps(); ++i) {
        auto d_or = run.denoised(x, s[i], i, true);
        if (!d_or.ok()) return d_or.status();
        const Vec& den = *d_or;
        const AncestralStep a = ancestral_step(s[i], s[i + 1], run.eta, false);
        if (a.sigma_down == 0.0f) {
            x = den;
        } else {
            const float t = t_of(s[i]);
            const float t_next = t_of(a.sigma_down);
            const float h = t_next - t;
            const float t_mid = t + 0.5f * h;
            const float sigma_mid = sigma_of(t_mid);
            const float c1 = sigma_mid / sigma_of(t);
            const float c2 = std::exp(-h * 0.5f) - 1.0f;
            for (size_t j = 0; j < run.n; ++j) x2[j] = c1 * x[j] - c2 * den[j];
            auto d2_or = run.denoised(x2, sigma_mid, i);
            if (!d2_or.ok()) return d2_or.status();
            const float c3 = sigma_of(t_next) / sigma_of(t);
            const float c4 = std::exp(-h) - 1.0f;
            for (size_t j = 0; j < run.n; ++j) x[j] = c3 * x[j] - c4 * (*d2_or)[j];
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

// The flow form works in lambda = log((1 - sigma) / sigma); the midpoint sigma is taken in
// closed form so sigma = 1 (pure noise, lambda = -inf) needs no special case beyond skipping
// the redundant second evaluation.
static Status dpmpp_2s_ancestral_flow(SamplerRun& run, Vec& x) {
    const auto& s = run.sigmas;
    Vec u(run.n);
    for (int i = 0; i < run.steps(); ++i) {
        const float sigma = s[i];
        const float sigma_to = s[i + 1];
        const bool at_pure_noise = 1.0 - sigma < 1e-6;
        // At sigma 1 the step's one evaluation is its final one, not a predictor.
        auto d_or = run.denoised(x, sigma, i, !at_pure_noise);
        if (!d_or.ok()) return d_or.status();
        Vec den = std::move(d_or.value());
        if (sigma_to == 0.0f) {
            x = std::move(den);
        } else {
            const AncestralStep a = ancestral_step(sigma, sigma_to, run.eta, true);
            Vec d_mid;
            if (at_pure_noise) {
                d_mid = den;  // the midpoint coincides with sigma = 1
            } else {
                const float exp_s =
                    std::sqrt(((1 - sigma) / sigma) * ((1 - a.sigma_down) / a.sigma_down));
                const float sigma_s = 1.0f / (exp_s + 1.0f);
                const float r = sigma_s / sigma;
                for (size_t j = 0; j < run.n; ++j) u[j] = x[j] * r + den[j] * (1.0f - r);
                auto d2_or = run.denoised(u, sigma_s, i);
                if (!d2_or.ok()) return d2_or.status();
                d_mid = std::move(d2_or.value());
            }
            const float r = a.sigma_down / sigma;
            for (size_t j = 0; j < run.n; ++j) x[j] = x[j] * r + d_mid[j] * (1.0f - r);
            if (run.eta > 0.0f) {
                const Vec z = run.noise();
                for (size_t j = 0; j < run.n; ++j) x[j] = a.alpha_scale * x[j] + z[j] * a.sigma_up;
            }
        }
        GGDIFF_TRY(run.step_done(i));
    }
    return Status::Ok();
}

// The DPM++ 2M update with D extrapolated linearly from the previous step's D:
// x <- a x - b ((1 + 1/(2r)) D - 1/(2r) D_prev).
void second_order_update(Vec& x, const Vec& den, const Vec& old_den, float a, float b, float r) {
    const float w_new = 1.0f + 1.0f / (2.0f * r);
    const float w_old = 1.0f / (2.0f * r);
    for (size_t j = 0; j < x.size(); ++j) {
        const float den_d = w_new * den[j] - w_old * old_den[j];
        x[j] = a * x[j] - b * den_d;
    }
}

Status run_dpmpp_2m(SamplerRun& run, Vec& x) {
    const auto& s = run.sigmas;
    Vec old_den;
    for (int i = 0; i < run.steps(); ++i) {
        auto d_or = run.denoised(x, s[i], i);
        if (!d_or.ok()) return d_or.status();
        Vec den = std::move(d_or.value());
        const float t = t_of(s[i]);
        const float t_next = t_of(s[i + 1]);
        const float h = t_next - t;
        const float a = s[i + 1] / s[i];
        const float b = std::exp(-h) - 1.0f;
        if (i == 0 || s[i + 1] == 0.0f) {
            for (size_t j = 0; j < run.n; ++j) x[j] = a * x[j] - b * den[j];
        } else {
            // Second order: extrapolate D linearly in t from the previous step.
            const float h_last = t - t_of(s[i - 1]);
            const float r = h_last / h;
            second_order_update(x, den, old_den, a, b, r);
        }
        old_den = std::move(den);
        GGDIFF_TRY(run.step_done(i));
    }
    return Status::Ok();
}

// A1111 discussion #8457's variant: the exponential weight uses the mean of the last two
// step sizes, which damps 2M's overshoot on schedules whose steps grow quickly (Karras).
Status run_dpmpp_2m_v2(SamplerRun& run, Vec& x) {
    const auto& s = run.sigmas;
    Vec old_den;
    for (int i = 0; i < run.steps(); ++i) {
        auto d_or = run.denoised(x, s[i], i);
        if (!d_or.ok()) return d_or.status();
        Vec den = std::move(d_or.value());
        const float t = t_of(s[i]);
        const float t_next = t_of(s[i + 1]);
        const float h = t_next - t;
        const float a = s[i + 1] / s[i];
        if (i == 0 || s[i + 1] == 0.0f) {
            const float b = std::exp(-h) - 1.0f;
            for (size_t j = 0; j < run.n; ++j) x[j] = a * x[j] - b * den[j];
        } else {
            const float h_last = t - t_of(s[i - 1]);
            const float h_min = std::min(h_last, h);
            const float h_max = std::max(h_last, h);
            const float r = h_max / h_min;
            const float h_d = (h_max + h_min) / 2.0f;
            const float b = std::exp(-h_d) - 1.0f;
            second_order_update(x, den, old_den, a, b, r);
        }
        old_den = std::move(den);
        GGDIFF_TRY(run.step_done(i));
    }
    return Status::Ok();
}

// DPM-Solver++(2M) SDE, midpoint variant, as k-diffusion and stable-diffusion.cpp run it
// (MISSION.md): with t = -log sigma_i, s = -log sigma_{i+1}, h = s - t,
//   x <- (sigma_{i+1}/sigma_i) e^{-eta h} x + (1 - e^{-h - eta h}) D
//        [+ 0.5 (1 - e^{-h - eta h}) / r (D - D_prev), r = h_prev / h, from the 2nd step]
//        [+ sigma_{i+1} sqrt(1 - e^{-2 eta h}) z, when eta > 0]
// and the step to sigma 0 returns D (no draw). Flow models run this same rule on their
// sigmas, as sd.cpp does: with eta = 0 it solves their probability-flow ODE as well (in
// terms of D it is dx/dsigma = (x - D)/sigma for both), but its noise keeps the marginals of
// x = x0 + sigma n, not of x = (1 - sigma) x0 + sigma n, so with eta > 0 a flow model gets
// sd.cpp's picture rather than a sample of its distribution.
Status run_dpmpp_2m_sde(SamplerRun& run, Vec& x) {
    const auto& s = run.sigmas;
    Vec old_den;
    float h_last = 0.0f;
    for (int i = 0; i < run.steps(); ++i) {
        auto d_or = run.denoised(x, s[i], i);
        if (!d_or.ok()) return d_or.status();
        Vec den = std::move(d_or.value());
        if (s[i + 1] == 0.0f) {
            x = den;
        } else {
            const float h = t_of(s[i + 1]) - t_of(s[i]);
            const float eta_h = run.eta * h;
            const float a = s[i + 1] / s[i] * std::exp(-eta_h);
            const float b = -std::expm1(-h - eta_h);
            for (size_t j = 0; j < run.n; ++j) x[j] = a * x[j] + b * den[j];
            if (!old_den.empty()) {
                const float r = h_last / h;
                const float c = 0.5f * b / r;
                for (size_t j = 0; j < run.n; ++j) x[j] += c * (den[j] - old_den[j]);
            }
            if (run.eta > 0.0f) {
                const float scale = s[i + 1] * std::sqrt(-std::expm1(-2.0f * eta_h));
                const Vec z = run.noise();
                for (size_t j = 0; j < run.n; ++j) x[j] += z[j] * scale;
            }
            h_last = h;
        }
        old_den = std::move(den);
        GGDIFF_TRY(run.step_done(i));
    }
    return Status::Ok();
}

}  // namespace ggdiff::sampling::detail
