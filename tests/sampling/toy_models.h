// Data distributions whose ideal denoiser is known in closed form, so samplers can be
// checked against exact answers without a network.
#pragma once

#include <cmath>
#include <vector>

#include "sampling/samplers.h"

namespace ggdiff::sampling::testing {

// x0 ~ N(mu, s^2). With x = x0 + sigma n the ideal denoiser is the posterior mean
// D(x, sigma) = (s^2 x + sigma^2 mu) / (s^2 + sigma^2), and the probability-flow ODE
// dx/dsigma = (x - D)/sigma keeps (x - mu)/sqrt(s^2 + sigma^2) constant.
struct Gaussian {
    double mu = 0.5;
    double s = 0.8;
    double denoise(double x, double sigma) const {
        return (s * s * x + sigma * sigma * mu) / (s * s + sigma * sigma);
    }
    double ode(double x, double from, double to) const {
        return mu + (x - mu) * std::sqrt(s * s + to * to) / std::sqrt(s * s + from * from);
    }
    double mean() const { return mu; }
    double variance() const { return s * s; }
};

// A two-component mixture: D is the posterior-weighted mix of the components' posterior
// means. Its ODE has no closed form; ode() integrates it with RK4 in log sigma (double,
// many steps), far more accurately than any sampler under test.
struct Mixture {
    double w[2] = {0.3, 0.7};
    double mu[2] = {-2.0, 1.5};
    double s[2] = {0.5, 0.8};
    double denoise(double x, double sigma) const {
        double logp[2], num = 0, den = 0;
        for (int k = 0; k < 2; ++k) {
            const double var = s[k] * s[k] + sigma * sigma;
            logp[k] = std::log(w[k]) - 0.5 * std::log(var) - 0.5 * (x - mu[k]) * (x - mu[k]) / var;
        }
        const double m = std::max(logp[0], logp[1]);
        for (int k = 0; k < 2; ++k) {
            const double p = std::exp(logp[k] - m);
            const double var = s[k] * s[k] + sigma * sigma;
            num += p * (s[k] * s[k] * x + sigma * sigma * mu[k]) / var;
            den += p;
        }
        return num / den;
    }
    double ode(double x, double from, double to, int steps = 4000) const {
        // In u = log sigma: dx/du = x - D(x, e^u).
        const double u0 = std::log(from), u1 = std::log(to);
        const double h = (u1 - u0) / steps;
        const auto f = [&](double xx, double u) { return xx - denoise(xx, std::exp(u)); };
        double u = u0;
        for (int i = 0; i < steps; ++i) {
            const double k1 = f(x, u);
            const double k2 = f(x + 0.5 * h * k1, u + 0.5 * h);
            const double k3 = f(x + 0.5 * h * k2, u + 0.5 * h);
            const double k4 = f(x + h * k3, u + h);
            x += h / 6 * (k1 + 2 * k2 + 2 * k3 + k4);
            u += h;
        }
        return x;
    }
    double mean() const { return w[0] * mu[0] + w[1] * mu[1]; }
    // P(x0 < c)
    double mass_below(double c) const {
        double p = 0;
        for (int k = 0; k < 2; ++k)
            p += w[k] * 0.5 * std::erfc(-(c - mu[k]) / (s[k] * std::sqrt(2.0)));
        return p;
    }
    double variance() const {
        double m2 = 0;
        for (int k = 0; k < 2; ++k) m2 += w[k] * (s[k] * s[k] + mu[k] * mu[k]);
        return m2 - mean() * mean();
    }
};

// An elementwise DenoiseFn over a model; the same estimate is returned as the
// unconditional one, which turns the CFG++ samplers into their plain counterparts.
template <class Model>
DenoiseFn denoiser_for(const Model& model, int* calls = nullptr) {
    return [model, calls](const std::vector<float>& x, float sigma, DenoiseStep,
                          bool need_uncond) -> Result<DenoiseResult> {
        if (calls) ++*calls;
        DenoiseResult r;
        r.denoised.resize(x.size());
        for (size_t i = 0; i < x.size(); ++i)
            r.denoised[i] = static_cast<float>(model.denoise(x[i], sigma));
        if (need_uncond) r.uncond_denoised = r.denoised;
        return r;
    };
}

// An Rng that counts draws, to check how much noise a sampler consumes.
class CountingRng : public Rng {
  public:
    explicit CountingRng(std::unique_ptr<Rng> inner) : inner_(std::move(inner)) {}
    void manual_seed(uint64_t seed) override { inner_->manual_seed(seed); }
    std::vector<float> randn(size_t n) override {
        ++calls;
        return inner_->randn(n);
    }
    int calls = 0;

  private:
    std::unique_ptr<Rng> inner_;
};

// sigmas from hi to lo, geometric, `steps` steps, no terminal zero.
inline std::vector<float> geometric_sigmas(double hi, double lo, int steps) {
    std::vector<float> s;
    for (int i = 0; i <= steps; ++i)
        s.push_back(static_cast<float>(hi * std::pow(lo / hi, double(i) / steps)));
    return s;
}

}  // namespace ggdiff::sampling::testing
