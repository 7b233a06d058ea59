// ER-SDE-Solver-3 (Cui et al., arXiv:2309.06169): an extended reverse-time SDE solver
// with the paper's noise scale function, up to third order in the data prediction.
// eta scales the injected noise (s_noise); the drift keeps the SDE's form regardless.
#include <algorithm>
#include <cmath>

#include "sampling/sampler_impl.h"

namespace ggdiff::sampling::detail {

namespace {

// lambda is the SDE's "time": sigma for VE models, sigma / (1 - sigma) for flow models
// (whose data part is additionally scaled by alpha = 1 - sigma).
float clamp_flow_sigma(float sigma) {
    return std::min(std::max(sigma, 1e-6f), 1.0f - 1e-4f);
}

float er_lambda(float sigma, bool flow) {
    if (flow) {
        sigma = clamp_flow_sigma(sigma);
        return sigma / std::max(1.0f - sigma, 1e-6f);
    }
    return std::max(sigma, 1e-6f);
}

float er_alpha(float sigma, bool flow) {
    return flow ? 1.0f - clamp_flow_sigma(sigma) : 1.0f;
}

// The paper's noise scale function f(x) = x (e^{x^0.3} + 10).
float noise_scaler(float x) {
    x = std::max(x, 0.0f);
    return x * (std::exp(std::pow(x, 0.3f)) + 10.0f);
}

}  // namespace

Status run_er_sde(SamplerRun& run, Vec& x) {
    constexpr int kMaxStage = 3;
    constexpr int kPoints = 200;  // quadrature points for the stage-2/3 integrals
    const bool flow = run.flow;
    std::vector<float> s = run.sigmas;
    if (flow)
        for (size_t i = 0; i + 1 < s.size(); ++i)
            if (s[i] > 1.0f) s[i] = clamp_flow_sigma(s[i]);
    std::vector<float> lambdas(s.size());
    for (size_t i = 0; i < s.size(); ++i) lambdas[i] = er_lambda(s[i], flow);

    Vec old_den, old_den_d;
    for (int i = 0; i < run.steps(); ++i) {
        auto d_or = run.denoised(x, s[i], i);
        if (!d_or.ok()) return d_or.status();
        Vec den = std::move(d_or.value());
        const int stage = std::min(kMaxStage, i + 1);
        if (s[i + 1] == 0.0f) {
            x = den;
        } else {
            const float lambda_s = lambdas[i];
            const float lambda_t = lambdas[i + 1];
            const float alpha_s = er_alpha(s[i], flow);
            const float alpha_t = er_alpha(s[i + 1], flow);
            const float scaled_s = noise_scaler(lambda_s);
            const float scaled_t = noise_scaler(lambda_t);
            const float r_alpha = alpha_s > 0.0f ? alpha_t / alpha_s : 0.0f;
            const float r = scaled_s > 0.0f ? scaled_t / scaled_s : 0.0f;
            for (size_t j = 0; j < run.n; ++j)
                x[j] = r_alpha * r * x[j] + alpha_t * (1.0f - r) * den[j];

            if (stage >= 2 && !old_den.empty()) {
                const float dt = lambda_t - lambda_s;
                const float step = -dt / static_cast<float>(kPoints);
                float sum = 0.0f, sum_u = 0.0f;
                for (int p = 0; p < kPoints; ++p) {
                    const float lambda_p = lambda_t + static_cast<float>(p) * step;
                    const float scaled_p = noise_scaler(lambda_p);
                    if (scaled_p <= 0.0f) continue;
                    sum += 1.0f / scaled_p;
                    if (stage >= 3 && !old_den_d.empty()) sum_u += (lambda_p - lambda_s) / scaled_p;
                }
                sum *= step;
                const float denom_d = lambda_s - lambdas[static_cast<size_t>(i) - 1];
                if (std::fabs(denom_d) > 1e-12f) {
                    const float coeff_d = alpha_t * (dt + sum * scaled_t);
                    Vec den_d(run.n);
                    for (size_t j = 0; j < run.n; ++j) {
                        den_d[j] = (den[j] - old_den[j]) / denom_d;
                        x[j] += coeff_d * den_d[j];
                    }
                    if (stage >= 3 && !old_den_d.empty()) {
                        const float denom_u =
                            (lambda_s - lambdas[static_cast<size_t>(i) - 2]) * 0.5f;
                        if (std::fabs(denom_u) > 1e-12f) {
                            sum_u *= step;
                            const float coeff_u = alpha_t * (0.5f * dt * dt + sum_u * scaled_t);
                            for (size_t j = 0; j < run.n; ++j)
                                x[j] += coeff_u * ((den_d[j] - old_den_d[j]) / denom_u);
                        }
                    }
                    old_den_d = std::move(den_d);
                }
            }

            const float noise_sq = lambda_t * lambda_t - lambda_s * lambda_s * r * r;
            if (run.eta > 0.0f && noise_sq > 0.0f) {
                const float scale = alpha_t * std::sqrt(std::max(noise_sq, 0.0f));
                const Vec z = run.noise();
                for (size_t j = 0; j < run.n; ++j) x[j] += z[j] * scale;
            }
        }
        old_den = std::move(den);
        GGDIFF_TRY(run.step_done(i));
    }
    return Status::Ok();
}

}  // namespace ggdiff::sampling::detail
