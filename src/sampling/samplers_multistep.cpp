// Multistep and exponential-integrator step rules: iPNDM (Zhang & Chen's improved PNDM,
// Adams-Bashforth on the ODE slope with up to 3 past slopes) and the RES family
// (refined exponential solvers: phi-function weights on D in t = -log sigma).
#include <cmath>
#include <deque>

#include "sampling/sampler_impl.h"

namespace ggdiff::sampling::detail {

namespace {

// phi_1(t) = (e^t - 1)/t and phi_2(t) = (phi_1(t) - 1)/t, with their Taylor series near 0
// where the quotients lose all precision.
float phi1(float t) {
    if (std::fabs(t) < 1e-6f) return 1.0f + t * 0.5f + (t * t) / 6.0f;
    return (std::exp(t) - 1.0f) / t;
}
float phi2(float t) {
    if (std::fabs(t) < 1e-6f) return 0.5f + t / 6.0f + (t * t) / 24.0f;
    return (phi1(t) - 1.0f) / t;
}

// The Adams-Bashforth combination of the current slope and up to 3 previous ones
// (oldest first in `hist`), using the fixed-step coefficients of the given order.
float adams_bashforth(int order, float d, const std::deque<Vec>& hist, size_t j) {
    const size_t k = hist.size();
    switch (order) {
        case 2:
            return (3.0f * d - hist[k - 1][j]) / 2.0f;
        case 3:
            return (23.0f * d - 16.0f * hist[k - 1][j] + 5.0f * hist[k - 2][j]) / 12.0f;
        case 4:
            return (55.0f * d - 59.0f * hist[k - 1][j] + 37.0f * hist[k - 2][j] -
                    9.0f * hist[k - 3][j]) /
                   24.0f;
        default:
            return d;
    }
}

}  // namespace

Status run_ipndm(SamplerRun& run, Vec& x) {
    constexpr int kMaxOrder = 4;
    const auto& s = run.sigmas;
    std::deque<Vec> hist;  // past slopes, oldest first
    Vec d(run.n);
    for (int i = 0; i < run.steps(); ++i) {
        auto d_or = run.denoised(x, s[i], i);
        if (!d_or.ok()) return d_or.status();
        for (size_t j = 0; j < run.n; ++j) d[j] = (x[j] - (*d_or)[j]) / s[i];
        const int order = std::min(kMaxOrder, i + 1);
        const float dt = s[i + 1] - s[i];
        for (size_t j = 0; j < run.n; ++j) x[j] += adams_bashforth(order, d[j], hist, j) * dt;
        if (hist.size() == kMaxOrder - 1) hist.pop_front();
        hist.push_back(d);
        GGDIFF_TRY(run.step_done(i));
    }
    return Status::Ok();
}

// iPNDM_v: the second-order step accounts for unequal step sizes; orders 3 and 4 keep the
// fixed-step weights (as the reference implementation does).
Status run_ipndm_v(SamplerRun& run, Vec& x) {
    constexpr int kMaxOrder = 4;
    const auto& s = run.sigmas;
    std::deque<Vec> hist;
    Vec d(run.n);
    for (int i = 0; i < run.steps(); ++i) {
        auto d_or = run.denoised(x, s[i], i);
        if (!d_or.ok()) return d_or.status();
        for (size_t j = 0; j < run.n; ++j) d[j] = (x[j] - (*d_or)[j]) / s[i];
        const int order = std::min(kMaxOrder, i + 1);
        const float h = s[i + 1] - s[i];
        const float h_prev = i > 0 ? s[i] - s[i - 1] : h;
        const float ratio = h / h_prev;
        for (size_t j = 0; j < run.n; ++j) {
            float slope;
            if (order == 2)
                slope = ((2.0f + ratio) * d[j] - ratio * hist.back()[j]) / 2.0f;
            else
                slope = adams_bashforth(order, d[j], hist, j);
            x[j] += slope * h;
        }
        if (hist.size() == kMaxOrder - 1) hist.pop_front();
        hist.push_back(d);
        GGDIFF_TRY(run.step_done(i));
    }
    return Status::Ok();
}

// RES multistep (2nd order): x_{i+1} = e^{-h} x + h (b1 D_i + b2 D_{i-1}) with
// b2 = phi_2(-h)/c2, b1 = phi_1(-h) - b2, c2 the previous step relative to this one.
Status run_res_multistep(SamplerRun& run, Vec& x) {
    const auto& s = run.sigmas;
    Vec old_den;
    float old_sigma_down = 0.0f;
    for (int i = 0; i < run.steps(); ++i) {
        auto d_or = run.denoised(x, s[i], i);
        if (!d_or.ok()) return d_or.status();
        Vec den = std::move(d_or.value());
        const float sigma = s[i];
        const AncestralStep a = ancestral_step(sigma, s[i + 1], run.eta, run.flow);
        if (a.sigma_down == 0.0f || old_den.empty()) {
            const float dt = a.sigma_down - sigma;
            for (size_t j = 0; j < run.n; ++j) x[j] += ((x[j] - den[j]) / sigma) * dt;
        } else {
            const float t = -std::log(sigma);
            const float t_old = -std::log(old_sigma_down);
            const float t_next = -std::log(a.sigma_down);
            const float t_prev = -std::log(s[i - 1]);
            const float h = t_next - t;
            const float c2 = (t_prev - t_old) / h;
            float b1 = phi1(-h) - phi2(-h) / c2;
            float b2 = phi2(-h) / c2;
            if (!std::isfinite(b1)) b1 = 0.0f;
            if (!std::isfinite(b2)) b2 = 0.0f;
            const float decay = std::exp(-h);
            for (size_t j = 0; j < run.n; ++j)
                x[j] = decay * x[j] + h * (b1 * den[j] + b2 * old_den[j]);
        }
        if (s[i + 1] > 0.0f && a.sigma_up > 0.0f) {
            const Vec z = run.noise();
            for (size_t j = 0; j < run.n; ++j) {
                if (run.flow) x[j] *= a.alpha_scale;
                x[j] += z[j] * a.sigma_up;
            }
        }
        old_den = std::move(den);
        old_sigma_down = a.sigma_down;
        GGDIFF_TRY(run.step_done(i));
    }
    return Status::Ok();
}

// RES 2s: a two-stage exponential Runge-Kutta step with the stage at c2 = 1/2.
Status run_res_2s(SamplerRun& run, Vec& x) {
    constexpr float kC2 = 0.5f;
    const auto& s = run.sigmas;
    Vec x0(run.n), x2(run.n);
    for (int i = 0; i < run.steps(); ++i) {
        const float sigma = s[i];
        auto d_or = run.denoised(x, sigma, i, true);
        if (!d_or.ok()) return d_or.status();
        const Vec& den = *d_or;
        const AncestralStep a = ancestral_step(sigma, s[i + 1], run.eta, run.flow);
        x0 = x;
        if (a.sigma_down == 0.0f) {
            x = den;
        } else {
            const float t = -std::log(sigma);
            const float h = -std::log(a.sigma_down) - t;
            const float a21 = kC2 * phi1(-h * kC2);
            const float b2 = phi2(-h) / kC2;
            const float b1 = phi1(-h) - b2;
            const float sigma_c2 = std::exp(-(t + h * kC2));
            for (size_t j = 0; j < run.n; ++j) x2[j] = x0[j] + (den[j] - x0[j]) * (h * a21);
            auto d2_or = run.denoised(x2, sigma_c2, i);
            if (!d2_or.ok()) return d2_or.status();
            for (size_t j = 0; j < run.n; ++j) {
                const float eps1 = den[j] - x0[j];
                const float eps2 = (*d2_or)[j] - x0[j];
                x[j] = x0[j] + h * (b1 * eps1 + b2 * eps2);
            }
        }
        if (s[i + 1] > 0.0f && a.sigma_up > 0.0f) {
            const Vec z = run.noise();
            for (size_t j = 0; j < run.n; ++j) {
                if (run.flow) x[j] *= a.alpha_scale;
                x[j] += z[j] * a.sigma_up;
            }
        }
        GGDIFF_TRY(run.step_done(i));
    }
    return Status::Ok();
}

}  // namespace ggdiff::sampling::detail
