// The golden-image paths (../shared/golden/sd1_mc32: euler, dpm++2m karras, euler_a,
// dpm++2m_sde, img2img euler at strength 0.6, a batch of two) run end to end the way the
// SD1 pipeline drives this module, against k-diffusion's update rules written out
// independently here in double precision, with the same cuda-RNG draws. A mismatch in
// schedule, step rule, noise offset or img2img cut shows up as a large difference.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include "sampling/philox_rng.h"
#include "sampling/sampling.h"
#include "toy_models.h"

namespace ggdiff::sampling {
namespace {

constexpr size_t kLatent = 8 * 8 * 4;  // a 64x64 SD1 image

const testing::Mixture kData;

double denoise(double x, double sigma) {
    return kData.denoise(x, sigma);
}

// k-diffusion's samplers (sampling.py), transcribed in double; `den` is D(x, sigma) of one
// latent element and `eta` dpm++2m_sde's.
std::vector<double> reference(const std::string& method, std::vector<double> x,
                              const std::vector<float>& sf, Rng& rng,
                              const std::function<double(double, double)>& den = denoise,
                              double eta = 1.0) {
    const size_t n = x.size();
    std::vector<double> s(sf.begin(), sf.end());
    std::vector<double> old;
    double h_last = 0;
    for (size_t i = 0; i + 1 < s.size(); ++i) {
        std::vector<double> d(n);
        for (size_t j = 0; j < n; ++j) d[j] = den(x[j], s[i]);
        if (method == "euler") {
            for (size_t j = 0; j < n; ++j) x[j] += (x[j] - d[j]) / s[i] * (s[i + 1] - s[i]);
        } else if (method == "euler_a") {
            const double up =
                std::min(s[i + 1], std::sqrt(s[i + 1] * s[i + 1] *
                                             (s[i] * s[i] - s[i + 1] * s[i + 1]) / (s[i] * s[i])));
            const double down = std::sqrt(s[i + 1] * s[i + 1] - up * up);
            for (size_t j = 0; j < n; ++j) x[j] += (x[j] - d[j]) / s[i] * (down - s[i]);
            if (s[i + 1] > 0) {
                const auto z = rng.randn(n);
                for (size_t j = 0; j < n; ++j) x[j] += z[j] * up;
            }
        } else if (method == "dpm++2m") {
            const double t = -std::log(s[i]), t_next = -std::log(s[i + 1]), h = t_next - t;
            for (size_t j = 0; j < n; ++j) {
                double dd = d[j];
                if (!old.empty() && s[i + 1] != 0) {
                    const double r = (t - (-std::log(s[i - 1]))) / h;
                    dd = (1 + 1 / (2 * r)) * d[j] - (1 / (2 * r)) * old[j];
                }
                x[j] = (s[i + 1] / s[i]) * x[j] - std::expm1(-h) * dd;
            }
        } else if (method == "dpm++2m_sde") {  // midpoint solver, s_noise = 1
            if (s[i + 1] == 0) {
                x = d;
            } else {
                const double t = -std::log(s[i]), ss = -std::log(s[i + 1]), h = ss - t,
                             eta_h = eta * h;
                for (size_t j = 0; j < n; ++j) {
                    x[j] =
                        s[i + 1] / s[i] * std::exp(-eta_h) * x[j] + -std::expm1(-h - eta_h) * d[j];
                    if (!old.empty())
                        x[j] +=
                            0.5 * -std::expm1(-h - eta_h) * (1 / (h_last / h)) * (d[j] - old[j]);
                }
                if (eta > 0) {
                    const auto z = rng.randn(n);
                    for (size_t j = 0; j < n; ++j)
                        x[j] += z[j] * s[i + 1] * std::sqrt(-std::expm1(-2 * eta_h));
                }
                h_last = h;
            }
        }
        old = d;
    }
    return x;
}

struct Case {
    std::string id;
    std::string sampler;
    std::string schedule;
    int steps;
    uint64_t seed;
    float strength;  // 1 = txt2img
};

// The pipeline's recipe for one image, using only this module's public API.
std::vector<float> pipeline(const Case& c, const std::vector<float>& init_latent) {
    const auto model = Parameterization::discrete(Prediction::Eps);
    auto sigmas = *make_sigmas(*parse_schedule(c.schedule), c.steps, model);
    if (c.strength < 1.0f) sigmas = img2img_sigmas(sigmas, c.strength);
    auto rng = make_rng(*parse_rng("cuda"), c.seed);
    const auto noise = rng->randn(kLatent);  // counter offset 0
    auto x = model.noise_latent(init_latent, noise, sigmas[0]);
    const Status st =
        sample(*parse_sampler(c.sampler), testing::denoiser_for(kData), x, sigmas, *rng);
    EXPECT_TRUE(st.ok()) << st.message();
    return x;
}

std::vector<double> expected(const Case& c, const std::vector<float>& init_latent) {
    const auto model = Parameterization::discrete(Prediction::Eps);
    auto sigmas = *make_sigmas(*parse_schedule(c.schedule), c.steps, model);
    if (c.strength < 1.0f) {
        // sd.cpp: t_enc = int(steps * strength), sigma_sched = sigmas[steps - t_enc - 1:]
        const int t_enc = static_cast<int>(c.steps * c.strength);
        sigmas.erase(sigmas.begin(), sigmas.begin() + (c.steps - t_enc - 1));
    }
    PhiloxRng rng(c.seed);
    const auto noise = rng.randn(kLatent);
    std::vector<double> x(kLatent);
    for (size_t i = 0; i < kLatent; ++i)
        x[i] = (init_latent.empty() ? 0.0 : init_latent[i]) + double(noise[i]) * sigmas[0];
    return reference(c.sampler, x, sigmas, rng);
}

TEST(SdCppReference, GoldenCasePaths) {
    std::vector<float> init(kLatent);
    for (size_t i = 0; i < kLatent; ++i) init[i] = static_cast<float>(std::sin(0.37 * i) * 1.5);
    const std::vector<Case> cases = {
        {"euler", "euler", "discrete", 4, 42, 1.0f},
        {"dpmpp2m_karras", "dpm++2m", "karras", 6, 7, 1.0f},
        {"euler_a", "euler_a", "discrete", 4, 42, 1.0f},
        {"dpmpp2m_sde", "dpm++2m_sde", "discrete", 5, 3, 1.0f},
        {"img2img", "euler", "discrete", 5, 11, 0.6f},
        {"batch2_0", "euler", "discrete", 3, 100, 1.0f},
        {"batch2_1", "euler", "discrete", 3, 101, 1.0f},
    };
    for (const auto& c : cases) {
        const auto init_latent = c.strength < 1.0f ? init : std::vector<float>{};
        const auto got = pipeline(c, init_latent);
        const auto want = expected(c, init_latent);
        double err = 0, scale = 0;
        for (size_t i = 0; i < kLatent; ++i) {
            err = std::max(err, std::fabs(got[i] - want[i]));
            scale = std::max(scale, std::fabs(want[i]));
        }
        EXPECT_LT(err, 2e-5 * std::max(scale, 1.0)) << c.id;
        EXPECT_GT(scale, 0.5) << c.id;  // the case really produced a sample
    }
}

// FLUX and Qwen Image sample dpm++2m_sde with the rule above unchanged, as sd.cpp does (no
// flow form): flux schedule from sigma 1, flow noising (x = sigma n at the start), the ideal
// flow denoiser of Gaussian data, cuda draws after the initial noise. The model's flow flag
// changes nothing.
TEST(SdCppReference, FlowModelsRunTheKDiffusionSdeRule) {
    const double mu = 0.5, sd = 0.8;
    const auto flow_denoise = [&](double x, double t) {
        const double var = (1 - t) * (1 - t) * sd * sd + t * t;
        return mu + (1 - t) * sd * sd * (x - (1 - t) * mu) / var;
    };
    const DenoiseFn den = [&](const std::vector<float>& x, float t, DenoiseStep,
                              bool u) -> Result<DenoiseResult> {
        DenoiseResult r;
        for (float xi : x) r.denoised.push_back(static_cast<float>(flow_denoise(xi, t)));
        if (u) r.uncond_denoised = r.denoised;
        return r;
    };
    const auto model = Parameterization::flux_flow(1.15f);
    ScheduleOptions so;
    so.image_seq_len = 16;  // a 64x64 FLUX image: 4x4 patches of 2x2 latents
    const auto sigmas = *make_sigmas(ScheduleKind::Flux, 5, model, so);
    ASSERT_EQ(sigmas.front(), 1.0f);
    for (const float eta : {1.0f, 0.5f, 0.0f}) {
        const uint64_t seed = 42;
        auto rng = make_rng(*parse_rng("cuda"), seed);
        const auto noise = rng->randn(kLatent);
        auto x = model.noise_latent({}, noise, sigmas[0]);
        const auto start = x;
        SamplerOptions opt;
        opt.eta = eta;
        opt.model = &model;
        ASSERT_TRUE(sample(SamplerKind::Dpmpp2mSde, den, x, sigmas, *rng, opt).ok());

        PhiloxRng ref_rng(seed);
        const auto ref_noise = ref_rng.randn(kLatent);
        std::vector<double> ref_x(kLatent);
        for (size_t i = 0; i < kLatent; ++i) ref_x[i] = double(ref_noise[i]) * sigmas[0];
        const auto want = reference("dpm++2m_sde", ref_x, sigmas, ref_rng, flow_denoise, eta);
        double err = 0, scale = 0;
        for (size_t i = 0; i < kLatent; ++i) {
            err = std::max(err, std::fabs(x[i] - want[i]));
            scale = std::max(scale, std::fabs(want[i]));
        }
        EXPECT_LT(err, 2e-5 * std::max(scale, 1.0)) << "eta " << eta;
        EXPECT_GT(scale, 0.5) << "eta " << eta;

        auto other_rng = make_rng(*parse_rng("cuda"), seed);
        other_rng->randn(kLatent);
        std::vector<float> y = start;
        opt.model = nullptr;
        ASSERT_TRUE(sample(SamplerKind::Dpmpp2mSde, den, y, sigmas, *other_rng, opt).ok());
        EXPECT_TRUE(y == x) << "eta " << eta << ": the flow flag changed the result";
    }
}

// Batch item b uses seed + b from a freshly seeded generator; the two images differ.
TEST(SdCppReference, BatchItemsAreIndependentlySeeded) {
    const Case a{"batch2_0", "euler", "discrete", 3, 100, 1.0f};
    Case b = a;
    b.seed = 101;
    EXPECT_NE(pipeline(a, {}), pipeline(b, {}));
    EXPECT_EQ(pipeline(a, {}), pipeline(a, {}));
}

}  // namespace
}  // namespace ggdiff::sampling
