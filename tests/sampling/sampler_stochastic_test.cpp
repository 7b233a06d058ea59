// Stochastic samplers: with the ideal denoiser of known data they must reproduce the data's
// mean and variance over many samples (every latent element is an independent sample), be
// reproducible per seed, and draw exactly as much noise as stable-diffusion.cpp does.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "sampling/philox_rng.h"
#include "sampling/samplers.h"
#include "toy_models.h"

namespace ggdiff::sampling {
namespace {

using testing::CountingRng;
using testing::Gaussian;
using testing::Mixture;

constexpr size_t kSamples = 40000;

struct Moments {
    double mean = 0, var = 0, left = 0;  // left: fraction below the mixture's valley
};

Moments moments(const std::vector<float>& x) {
    Moments m;
    for (float v : x) {
        m.mean += v;
        if (v < -0.25f) m.left += 1;
    }
    m.mean /= x.size();
    m.left /= x.size();
    for (float v : x) m.var += (v - m.mean) * (v - m.mean);
    m.var /= x.size() - 1;
    return m;
}

// Runs a sampler the way the pipeline does: one generator, the initial noise first
// (counter offset 0), the sampler's noise after it.
template <class Model>
std::vector<float> run(SamplerKind kind, const Model& data, const std::vector<float>& sigmas,
                       uint64_t seed, float eta = NAN, size_t samples = kSamples) {
    PhiloxRng rng(seed);
    const auto z = rng.randn(samples);
    // Start from the exact marginal at sigmas[0]: N(mean, var + sigma^2) for a Gaussian; the
    // mixture is close enough to that at sigma_max = 14.6 for these tolerances.
    std::vector<float> x(samples);
    const double spread = std::sqrt(data.variance() + double(sigmas[0]) * sigmas[0]);
    for (size_t i = 0; i < samples; ++i) x[i] = static_cast<float>(data.mean() + spread * z[i]);
    SamplerOptions opt;
    opt.eta = eta;
    const Status st = sample(kind, testing::denoiser_for(data), x, sigmas, rng, opt);
    EXPECT_TRUE(st.ok()) << st.message();
    return x;
}

struct StochasticCase {
    SamplerKind kind;
    float eta;
    int steps;  // the Euler-ancestral family is first order in distribution: many steps
    size_t samples;
};

const std::vector<StochasticCase>& stochastic_cases() {
    static const std::vector<StochasticCase> cases = {
        {SamplerKind::EulerA, NAN, 400, 24000},          {SamplerKind::Dpmpp2sA, NAN, 40, kSamples},
        {SamplerKind::Dpmpp2mSde, NAN, 40, kSamples},    {SamplerKind::ErSde, NAN, 40, kSamples},
        {SamplerKind::ResMultistep, 1.0f, 40, kSamples}, {SamplerKind::Res2s, 1.0f, 40, kSamples},
        {SamplerKind::Dpmpp2mSde, 0.5f, 40, kSamples},
    };
    return cases;
}

TEST(SamplerStochastic, GaussianMeanAndVariance) {
    const Gaussian g;
    const auto model = Parameterization::discrete(Prediction::Eps);
    for (const auto& c : stochastic_cases()) {
        const auto sigmas = *make_sigmas(ScheduleKind::Karras, c.steps, model);
        const Moments m = moments(run(c.kind, g, sigmas, 11, c.eta, c.samples));
        std::printf("[ stats ] gaussian %-15s eta %-4.2g mean %.4f (%.4f) var %.4f (%.4f)\n",
                    sampler_cli_name(c.kind), std::isnan(c.eta) ? default_eta(c.kind) : c.eta,
                    m.mean, g.mean(), m.var, g.variance());
        EXPECT_NEAR(m.mean, g.mean(), 0.02) << sampler_cli_name(c.kind);
        EXPECT_NEAR(m.var, g.variance(), 0.05 * g.variance()) << sampler_cli_name(c.kind);
    }
}

// ddim_trailing is euler_a (its eta is DDIM's); the CFG++ form with uncond == cond is
// euler_a up to float rounding. Same seed, same noise, same result.
TEST(SamplerStochastic, AncestralVariantsAgreeWithEulerA) {
    const Mixture mix;
    const auto model = Parameterization::discrete(Prediction::Eps);
    const auto sigmas = *make_sigmas(ScheduleKind::Karras, 12, model);
    for (float eta : {0.0f, 0.6f, 1.0f}) {
        const auto ref = run(SamplerKind::EulerA, mix, sigmas, 31, eta, 2000);
        EXPECT_EQ(run(SamplerKind::DdimTrailing, mix, sigmas, 31, eta, 2000), ref);
        const auto pp = run(SamplerKind::EulerACfgPp, mix, sigmas, 31, eta, 2000);
        double diff = 0;
        for (size_t i = 0; i < ref.size(); ++i)
            diff = std::max(diff, double(std::fabs(pp[i] - ref[i])));
        EXPECT_LT(diff, 1e-4) << eta;
    }
}

// Euler-ancestral's variance deficit is a first-order discretization bias, not a bug: it
// shrinks in proportion to the step size.
TEST(SamplerStochastic, EulerAncestralBiasShrinksWithSteps) {
    const Gaussian g;
    const auto model = Parameterization::discrete(Prediction::Eps);
    double prev_bias = 1e9;
    for (int steps : {20, 60}) {
        const auto sigmas = *make_sigmas(ScheduleKind::Karras, steps, model);
        const double bias =
            g.variance() - moments(run(SamplerKind::EulerA, g, sigmas, 4, NAN, 16000)).var;
        EXPECT_GT(bias, 0.0);
        EXPECT_LT(bias, prev_bias / 2.2) << steps;  // ~1/3 expected for 3x the steps
        prev_bias = bias;
    }
}

TEST(SamplerStochastic, MixtureMeanVarianceAndModes) {
    const Mixture mix;
    const auto model = Parameterization::discrete(Prediction::Eps);
    for (const auto& c : stochastic_cases()) {
        const auto sigmas = *make_sigmas(ScheduleKind::Karras, c.steps, model);
        const Moments m = moments(run(c.kind, mix, sigmas, 12, c.eta, c.samples));
        std::printf(
            "[ stats ] mixture  %-15s mean %.4f (%.4f) var %.4f (%.4f) left mode %.4f (%.4f)\n",
            sampler_cli_name(c.kind), m.mean, mix.mean(), m.var, mix.variance(), m.left,
            mix.mass_below(-0.25));
        EXPECT_NEAR(m.mean, mix.mean(), 0.05) << sampler_cli_name(c.kind);
        EXPECT_NEAR(m.var, mix.variance(), 0.05 * mix.variance()) << sampler_cli_name(c.kind);
        EXPECT_NEAR(m.left, mix.mass_below(-0.25), 0.01) << sampler_cli_name(c.kind);
    }
}

// LCM jumps to D and re-noises; with a plain (non-consistency) denoiser the outcome is not
// the data distribution but follows a known linear recursion for Gaussian data:
// x_{i+1} = mu + k_i (x_i - mu) + sigma_{i+1} z, k_i = s^2 / (s^2 + sigma_i^2).
TEST(SamplerStochastic, LcmFollowsItsGaussianRecursion) {
    const Gaussian g;
    const auto model = Parameterization::discrete(Prediction::Eps);
    const auto sigmas = *make_sigmas(ScheduleKind::Lcm, 6, model);
    double var = g.variance() + double(sigmas[0]) * sigmas[0];
    for (size_t i = 0; i + 1 < sigmas.size(); ++i) {
        const double k = g.s * g.s / (g.s * g.s + double(sigmas[i]) * sigmas[i]);
        var = k * k * var + double(sigmas[i + 1]) * sigmas[i + 1];
    }
    const Moments m = moments(run(SamplerKind::Lcm, g, sigmas, 5));
    EXPECT_NEAR(m.mean, g.mean(), 0.02);
    EXPECT_NEAR(m.var, var, 0.04 * var);
    EXPECT_LT(var, g.variance());  // the recursion really differs from the data
}

// TCD on its LCM schedule. Each step moves to the earlier level sigma_s (the training
// sigma at floor((1 - gamma) t_prev)) along the line through D and re-noises to sigma_prev:
//   x' = D + sigma_s (x - D)/sigma + sqrt(sigma_prev^2 - sigma_s^2) z,
// and the last step lands on sqrt(a_0) D + sqrt(1 - a_0)(x - D)/sigma. For Gaussian data
// that is a linear recursion in mean and variance, derived here independently.
TEST(SamplerStochastic, TcdFollowsItsGaussianRecursion) {
    const Gaussian g;
    const auto model = Parameterization::discrete(Prediction::Eps);
    const auto& table = model.train_sigmas();
    const auto sigmas = *make_sigmas(ScheduleKind::Lcm, 8, model);
    for (float gamma : {0.0f, 0.3f, 1.0f}) {
        double mean = g.mu, var = g.variance() + double(sigmas[0]) * sigmas[0];
        for (size_t i = 0; i + 1 < sigmas.size(); ++i) {
            const double sigma = sigmas[i], to = sigmas[i + 1];
            const double k = g.s * g.s / (g.s * g.s + sigma * sigma);  // D - mu = k (x - mu)
            if (to > 0) {
                const int t_prev = static_cast<int>(std::lround(model.sigma_to_t(sigmas[i + 1])));
                const double sigma_s = table[static_cast<size_t>(std::floor((1 - gamma) * t_prev))];
                const double c = k + sigma_s / sigma * (1 - k);
                var = c * c * var + (to * to - sigma_s * sigma_s);
            } else {
                const double a0 = 1 / (1 + double(table[0]) * table[0]);
                const double c = std::sqrt(a0) * k + std::sqrt(1 - a0) * (1 - k) / sigma;
                var = c * c * var;
                mean = std::sqrt(a0) * mean;
            }
        }
        const Moments m = moments(run(SamplerKind::Tcd, g, sigmas, 9, gamma));
        std::printf("[ stats ] tcd gamma %.1f mean %.4f (%.4f) var %.4f (%.4f)\n", gamma, m.mean,
                    mean, m.var, var);
        EXPECT_NEAR(m.mean, mean, 0.02) << gamma;
        EXPECT_NEAR(m.var, var, 0.04 * var) << gamma;
    }
}

// Rectified flow, x = (1 - t) x0 + t n: the samplers' flow forms (rescaled ancestral
// steps, flow ER-SDE, flow LCM) must land on the data distribution too. dpm++2m_sde has no
// flow form (sd.cpp runs k-diffusion's rule on flow sigmas, see sd_cpp_reference_test): its
// noise keeps the marginals of x0 + sigma n, so on a flow model it does not.
TEST(SamplerStochastic, FlowFormsReproduceTheData) {
    const double mu = 0.5, s = 0.8;
    const auto var = [&](double t) { return (1 - t) * (1 - t) * s * s + t * t; };
    DenoiseFn den = [&](const std::vector<float>& x, float t, DenoiseStep,
                        bool u) -> Result<DenoiseResult> {
        DenoiseResult r;
        r.denoised.resize(x.size());
        for (size_t i = 0; i < x.size(); ++i)
            r.denoised[i] =
                static_cast<float>(mu + (1 - t) * s * s * (x[i] - (1 - t) * mu) / var(t));
        if (u) r.uncond_denoised = r.denoised;
        return r;
    };
    const auto model = Parameterization::flow(3.0f);
    const struct {
        SamplerKind kind;
        float eta;
        int steps;
    } cases[] = {{SamplerKind::EulerA, 1.0f, 200},
                 {SamplerKind::Dpmpp2sA, 1.0f, 50},
                 {SamplerKind::Res2s, 1.0f, 50},
                 {SamplerKind::ResMultistep, 1.0f, 50},
                 {SamplerKind::ErSde, 1.0f, 50}};
    for (const auto& c : cases) {
        // Karras spacing: the shifted discrete schedule's last steps are too coarse for the
        // first-order noise injection at these step counts.
        const auto sigmas = *make_sigmas(ScheduleKind::Karras, c.steps, model);
        PhiloxRng rng(8);
        const size_t n = 20000;
        auto x = rng.randn(n);  // t = 1: pure noise
        SamplerOptions opt;
        opt.eta = c.eta;
        opt.model = &model;
        ASSERT_TRUE(sample(c.kind, den, x, sigmas, rng, opt).ok());
        const Moments m = moments(x);
        std::printf("[ stats ] flow %-15s mean %.4f (%.4f) var %.4f (%.4f)\n",
                    sampler_cli_name(c.kind), m.mean, mu, m.var, s * s);
        EXPECT_NEAR(m.mean, mu, 0.03) << sampler_cli_name(c.kind);
        EXPECT_NEAR(m.var, s * s, 0.06 * s * s) << sampler_cli_name(c.kind);
    }
}

TEST(SamplerStochastic, SameSeedSameResultOtherSeedOtherResult) {
    const Gaussian g;
    const auto model = Parameterization::discrete(Prediction::Eps);
    const auto sigmas = *make_sigmas(ScheduleKind::Discrete, 8, model);
    for (SamplerKind kind : all_samplers()) {
        if (!is_stochastic(kind)) continue;
        const auto a = run(kind, g, sigmas, 21);
        const auto b = run(kind, g, sigmas, 21);
        EXPECT_EQ(a, b) << sampler_cli_name(kind);
        PhiloxRng start(21);
        auto x = start.randn(kSamples);  // same start as seed 21, different sampler noise
        for (size_t i = 0; i < kSamples; ++i)
            x[i] = static_cast<float>(
                g.mean() + std::sqrt(g.variance() + double(sigmas[0]) * sigmas[0]) * x[i]);
        PhiloxRng other(22);
        ASSERT_TRUE(sample(kind, testing::denoiser_for(g), x, sigmas, other).ok());
        EXPECT_NE(x, a) << sampler_cli_name(kind) << " ignores the generator";
    }
}

// How many randn() calls each sampler makes: must equal stable-diffusion.cpp's, or every
// later draw (and every image after the first noise injection) shifts.
TEST(SamplerStochastic, NoiseDrawCountsMatchStableDiffusionCpp) {
    const Gaussian g;
    const auto model = Parameterization::discrete(Prediction::Eps);
    const int steps = 5;
    const auto sigmas = *make_sigmas(ScheduleKind::Discrete, steps, model);
    const auto count = [&](SamplerKind kind, float eta) {
        CountingRng rng(make_rng(RngKind::Cuda, 1));
        std::vector<float> x(16, 1.0f);
        SamplerOptions opt;
        opt.eta = eta;
        EXPECT_TRUE(sample(kind, testing::denoiser_for(g), x, sigmas, rng, opt).ok());
        return rng.calls;
    };
    // One draw per step that does not end at sigma 0.
    for (SamplerKind kind : {SamplerKind::EulerA, SamplerKind::Dpmpp2sA, SamplerKind::Dpmpp2mSde,
                             SamplerKind::ErSde, SamplerKind::EulerACfgPp, SamplerKind::Lcm})
        EXPECT_EQ(count(kind, NAN), steps - 1) << sampler_cli_name(kind);
    for (SamplerKind kind : {SamplerKind::DdimTrailing, SamplerKind::Tcd, SamplerKind::ResMultistep,
                             SamplerKind::Res2s})
        EXPECT_EQ(count(kind, 0.5f), steps - 1) << sampler_cli_name(kind);
    // Deterministic settings draw nothing, except the two samplers whose sd.cpp code
    // draws (and multiplies by zero) regardless of eta.
    for (SamplerKind kind : all_samplers()) {
        if (kind == SamplerKind::Lcm) continue;
        const int expect =
            (kind == SamplerKind::Dpmpp2sA || kind == SamplerKind::EulerACfgPp) ? steps - 1 : 0;
        EXPECT_EQ(count(kind, 0.0f), expect) << sampler_cli_name(kind);
    }
}

}  // namespace
}  // namespace ggdiff::sampling
