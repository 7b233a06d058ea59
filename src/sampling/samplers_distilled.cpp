// Step rules for consistency-distilled models: LCM (jump to D, re-noise to the next level)
// and TCD's strategic stochastic sampling (Zheng et al., arXiv:2402.19159, Algorithm 4).
#include <algorithm>
#include <cmath>

#include "sampling/sampler_impl.h"

namespace ggdiff::sampling::detail {

Status run_lcm(SamplerRun& run, Vec& x) {
    const auto& s = run.sigmas;
    for (int i = 0; i < run.steps(); ++i) {
        auto d_or = run.denoised(x, s[i], i);
        if (!d_or.ok()) return d_or.status();
        x = std::move(d_or.value());
        if (s[i + 1] > 0.0f) {
            if (run.flow)
                for (float& v : x) v *= (1 - s[i + 1]);
            const Vec z = run.noise();
            for (size_t j = 0; j < run.n; ++j) x[j] = x[j] + z[j] * s[i + 1];
        }
        GGDIFF_TRY(run.step_done(i));
    }
    return Status::Ok();
}

// eta is the paper's gamma: each step predicts the sample at the earlier timestep
// s = floor((1 - gamma) * t_prev) and re-noises it to t_prev. gamma = 0 is deterministic
// (DDIM-like); gamma = 1 jumps to the data estimate as LCM does.
Status run_tcd(SamplerRun& run, Vec& x) {
    static const Parameterization kSd1 = Parameterization::discrete(Prediction::Eps);
    const std::vector<float>& alphas =
        run.model ? run.model->alphas_cumprod() : kSd1.alphas_cumprod();
    const int table = static_cast<int>(alphas.size());
    std::vector<double> train_sigmas(alphas.size());
    for (size_t i = 0; i < alphas.size(); ++i)
        train_sigmas[i] = std::sqrt((1 - static_cast<double>(alphas[i])) / alphas[i]);
    // The training timestep whose sigma is nearest (sigmas ascend with the timestep).
    const auto timestep_of = [&](float sigma) {
        const auto it = std::lower_bound(train_sigmas.begin(), train_sigmas.end(), sigma);
        if (it == train_sigmas.begin()) return 0;
        if (it == train_sigmas.end()) return table - 1;
        const int hi = static_cast<int>(it - train_sigmas.begin());
        const int lo = hi - 1;
        return std::abs(train_sigmas[static_cast<size_t>(hi)] - sigma) <
                       std::abs(train_sigmas[static_cast<size_t>(lo)] - sigma)
                   ? hi
                   : lo;
    };

    const auto& s = run.sigmas;
    for (int i = 0; i < run.steps(); ++i) {
        const float sigma = s[i];
        const float sigma_to = s[i + 1];
        const int prev_timestep = timestep_of(sigma_to);
        const int timestep_s = static_cast<int>(std::floor((1 - run.eta) * prev_timestep));
        auto d_or = run.denoised(x, sigma, i);
        if (!d_or.ok()) return d_or.status();
        const Vec& den = *d_or;

        const float alpha_prev = 1.0f / (sigma_to * sigma_to + 1.0f);
        const float alpha_s = alphas[static_cast<size_t>(std::max(timestep_s, 0))];
        const float beta_s = 1.0f - alpha_s;
        const float c_den = std::sqrt(alpha_s / alpha_prev);
        const float c_eps = std::sqrt(beta_s / alpha_prev);
        for (size_t j = 0; j < run.n; ++j) {
            const float d = (x[j] - den[j]) / sigma;
            x[j] = c_den * den[j] + c_eps * d;
        }
        if (run.eta > 0.0f && sigma_to > 0.0f) {
            const float keep = std::sqrt(alpha_prev / alpha_s);
            const float add = std::sqrt(std::max(1.0f / alpha_prev - 1.0f / alpha_s, 0.0f));
            const Vec z = run.noise();
            for (size_t j = 0; j < run.n; ++j) x[j] = keep * x[j] + add * z[j];
        }
        GGDIFF_TRY(run.step_done(i));
    }
    return Status::Ok();
}

}  // namespace ggdiff::sampling::detail
