// Schedules and parameterizations against their formulas, evaluated independently in
// double precision here.
#include <gtest/gtest.h>

#include <cmath>

#include "sampling/parameterization.h"
#include "sampling/schedules.h"

namespace ggdiff::sampling {
namespace {

// SD1's training sigmas from the DDPM definition, in double.
std::vector<double> sd1_sigmas_double() {
    std::vector<double> out(1000);
    double prod = 1.0;
    for (int i = 0; i < 1000; ++i) {
        const double b =
            std::pow(std::sqrt(0.00085) + (std::sqrt(0.012) - std::sqrt(0.00085)) * i / 999.0, 2);
        prod *= 1.0 - b;
        out[i] = std::sqrt((1.0 - prod) / prod);
    }
    return out;
}

double sd1_sigma_at(double t) {
    static const auto table = sd1_sigmas_double();
    const int lo = static_cast<int>(std::floor(t));
    const int hi = static_cast<int>(std::ceil(t));
    const double w = t - lo;
    return std::exp((1 - w) * std::log(table[lo]) + w * std::log(table[hi]));
}

void expect_rel(double got, double want, double rel, const std::string& what) {
    EXPECT_NEAR(got, want, rel * std::max(1.0, std::fabs(want))) << what;
}

TEST(Parameterization, Sd1TableEndpoints) {
    const auto m = Parameterization::discrete(Prediction::Eps);
    EXPECT_NEAR(m.sigma_max(), 14.6146, 5e-4);
    EXPECT_NEAR(m.sigma_min(), 0.0292, 5e-5);
    EXPECT_EQ(m.train_steps(), 1000);
    const auto ref = sd1_sigmas_double();
    for (int t : {0, 1, 250, 500, 998, 999})
        expect_rel(m.t_to_sigma(static_cast<float>(t)), ref[t], 2e-5, "t=" + std::to_string(t));
}

TEST(Parameterization, SigmaTimestepRoundTrip) {
    const auto m = Parameterization::discrete(Prediction::Eps);
    for (float t : {0.0f, 3.0f, 17.25f, 333.0f, 500.5f, 666.0f, 998.75f, 999.0f}) {
        EXPECT_NEAR(m.sigma_to_t(m.t_to_sigma(t)), t, 2e-3f) << t;
    }
    // Outside the table the timestep saturates instead of extrapolating.
    EXPECT_FLOAT_EQ(m.sigma_to_t(1000.0f), 999.0f);
    EXPECT_FLOAT_EQ(m.sigma_to_t(1e-4f), 0.0f);
}

TEST(Parameterization, Scalings) {
    const auto eps = Parameterization::discrete(Prediction::Eps);
    auto s = eps.scalings(2.0f);
    EXPECT_FLOAT_EQ(s.c_skip, 1.0f);
    EXPECT_FLOAT_EQ(s.c_out, -2.0f);
    EXPECT_FLOAT_EQ(s.c_in, 1.0f / std::sqrt(5.0f));
    const auto v = Parameterization::discrete(Prediction::V);
    s = v.scalings(2.0f);
    EXPECT_FLOAT_EQ(s.c_skip, 1.0f / 5.0f);
    EXPECT_FLOAT_EQ(s.c_out, -2.0f / std::sqrt(5.0f));
    EXPECT_FLOAT_EQ(s.c_in, 1.0f / std::sqrt(5.0f));
    const auto flow = Parameterization::flow(3.0f);
    s = flow.scalings(0.25f);
    EXPECT_FLOAT_EQ(s.c_skip, 1.0f);
    EXPECT_FLOAT_EQ(s.c_out, -0.25f);
    EXPECT_FLOAT_EQ(s.c_in, 1.0f);
    const auto edm = Parameterization::edm_v(0.002f, 120.0f, 0.5f);
    s = edm.scalings(1.0f);
    EXPECT_FLOAT_EQ(s.c_skip, 0.25f / 1.25f);
    EXPECT_FLOAT_EQ(s.c_out, -0.5f / std::sqrt(1.25f));
}

// The scalings make D exact for the right kind of network output: an eps model that
// returns the true noise, a v model that returns v = alpha*n - sigma*x0 (in VE units), a
// flow model that returns n - x0.
TEST(Parameterization, ScalingsRecoverTheCleanSample) {
    const float x0 = 0.7f, n = -1.3f, sigma = 3.0f;
    {
        const auto m = Parameterization::discrete(Prediction::Eps);
        const float x = x0 + sigma * n;
        const auto s = m.scalings(sigma);
        EXPECT_NEAR(s.c_skip * x + s.c_out * n, x0, 1e-5f);
    }
    {
        const auto m = Parameterization::discrete(Prediction::V);
        const float x = x0 + sigma * n;
        const float alpha = 1.0f / std::sqrt(1 + sigma * sigma);
        const float v = alpha * n - alpha * sigma * x0;  // v in the scaled-input space
        const auto s = m.scalings(sigma);
        EXPECT_NEAR(s.c_skip * x + s.c_out * v, x0, 1e-5f);
    }
    {
        const auto m = Parameterization::flow(3.0f);
        const float fs = 0.6f;
        const float x = (1 - fs) * x0 + fs * n;
        const auto s = m.scalings(fs);
        EXPECT_NEAR(s.c_skip * x + s.c_out * (n - x0), x0, 1e-5f);
    }
}

TEST(Parameterization, FlowShift) {
    auto m = Parameterization::flow(3.0f);
    EXPECT_TRUE(m.is_flow());
    EXPECT_FLOAT_EQ(m.sigma_max(), 1.0f);
    const double s0 = 0.001;
    EXPECT_NEAR(m.sigma_min(), 3 * s0 / (1 + 2 * s0), 1e-7);
    EXPECT_NEAR(m.t_to_sigma(499.0f), 3 * 0.5 / (1 + 2 * 0.5), 1e-6);
    EXPECT_FLOAT_EQ(m.sigma_to_t(0.5f), 500.0f);
    m.set_shift(1.0f);
    EXPECT_NEAR(m.t_to_sigma(499.0f), 0.5f, 1e-6f);
    const auto flux = Parameterization::flux_flow(1.15f);
    EXPECT_NEAR(flux.t_to_sigma(499.0f), std::exp(1.15) / (std::exp(1.15) + 1.0), 1e-6);
    EXPECT_FLOAT_EQ(flux.sigma_to_t(0.3f), 0.3f);
}

TEST(Parameterization, NoiseLatentAndInverse) {
    const auto eps = Parameterization::discrete(Prediction::Eps);
    const std::vector<float> x0 = {1.0f, -2.0f}, n = {0.5f, 0.25f};
    EXPECT_EQ(eps.noise_latent(x0, n, 2.0f), (std::vector<float>{2.0f, -1.5f}));
    EXPECT_EQ(eps.noise_latent({}, n, 2.0f), (std::vector<float>{1.0f, 0.5f}));  // txt2img
    EXPECT_EQ(eps.inverse_noise_scaling(0.5f, x0), x0);
    const auto flow = Parameterization::flow(3.0f);
    const auto xf = flow.noise_latent(x0, n, 0.25f);
    EXPECT_FLOAT_EQ(xf[0], 0.75f + 0.125f);
    EXPECT_FLOAT_EQ(flow.inverse_noise_scaling(0.5f, {1.0f})[0], 2.0f);
    EXPECT_FLOAT_EQ(eps.noise_level_to_sigma(0.5f), 1.0f);
    EXPECT_FLOAT_EQ(flow.noise_level_to_sigma(0.5f), 0.5f);
}

TEST(Parameterization, ShiftedTimestepForSdxl) {
    const auto m = Parameterization::discrete(Prediction::Eps);
    const float sigma = m.t_to_sigma(800.0f);
    const auto plain = m.model_step(sigma);
    EXPECT_NEAR(plain.t, 800.0f, 1e-2f);
    const auto shifted = m.model_step(sigma, 500);
    EXPECT_FLOAT_EQ(shifted.t, 400.0f);  // round(800 * 500/1000)
    const auto at400 = m.scalings(m.t_to_sigma(400.0f));
    EXPECT_FLOAT_EQ(shifted.s.c_out, at400.c_out);
    EXPECT_FLOAT_EQ(shifted.s.c_in, plain.s.c_in);
    EXPECT_NEAR(shifted.s.c_skip, at400.c_skip * plain.s.c_in / at400.c_in, 1e-6f);
}

TEST(Parameterization, CustomAlphasAreValidated) {
    EXPECT_FALSE(Parameterization::discrete_from_alphas(Prediction::Eps, {0.9f}).ok());
    EXPECT_FALSE(Parameterization::discrete_from_alphas(Prediction::Eps, {0.9f, 0.95f}).ok());
    EXPECT_FALSE(Parameterization::discrete_from_alphas(Prediction::Eps, {0.9f, -0.1f}).ok());
    auto ok = Parameterization::discrete_from_alphas(Prediction::V, {0.99f, 0.5f, 0.1f});
    ASSERT_TRUE(ok.ok());
    EXPECT_NEAR(ok->sigma_max(), 3.0f, 1e-5f);
    EXPECT_EQ(ok->train_steps(), 3);
}

void expect_well_formed(const std::vector<float>& s, int steps, const std::string& what) {
    ASSERT_EQ(s.size(), static_cast<size_t>(steps) + 1) << what;
    EXPECT_EQ(s.back(), 0.0f) << what;
    for (size_t i = 0; i + 1 < s.size(); ++i) {
        EXPECT_TRUE(std::isfinite(s[i]) && s[i] > 0.0f) << what << " [" << i << "] = " << s[i];
        EXPECT_GE(s[i], s[i + 1]) << what << " not descending at " << i;
    }
}

TEST(Schedules, EveryScheduleIsWellFormedForEveryFamily) {
    const std::vector<std::pair<std::string, Parameterization>> models = {
        {"sd1", Parameterization::discrete(Prediction::Eps)},
        {"flow", Parameterization::flow(3.0f)},
        {"flux", Parameterization::flux_flow(1.15f)},
        {"edm", Parameterization::edm_v()}};
    for (const auto& [model_name, model] : models) {
        for (const auto& name : schedule_names()) {
            const ScheduleKind kind = *parse_schedule(name);
            if ((kind == ScheduleKind::Flux || kind == ScheduleKind::Flux2) && !model.is_flow()) {
                EXPECT_FALSE(make_sigmas(kind, 4, model).ok()) << model_name;
                continue;
            }
            for (int steps : {1, 2, 3, 4, 5, 6, 10, 20, 21, 30, 50, 150}) {
                auto s = make_sigmas(kind, steps, model);
                ASSERT_TRUE(s.ok()) << name << " " << s.status().message();
                expect_well_formed(*s, steps,
                                   model_name + "/" + name + "/" + std::to_string(steps));
            }
        }
    }
}

TEST(Schedules, StrictlyDecreasingWhereTheFormulaIs) {
    const auto m = Parameterization::discrete(Prediction::Eps);
    for (ScheduleKind kind : {ScheduleKind::Discrete, ScheduleKind::Karras,
                              ScheduleKind::Exponential, ScheduleKind::Ays, ScheduleKind::Gits,
                              ScheduleKind::SgmUniform, ScheduleKind::Simple, ScheduleKind::Lcm}) {
        const auto s = *make_sigmas(kind, 12, m);
        for (size_t i = 0; i + 1 < s.size(); ++i)
            EXPECT_GT(s[i], s[i + 1]) << schedule_name(kind) << " " << i;
    }
}

TEST(Schedules, DiscreteMatchesLinearTimesteps) {
    const auto m = Parameterization::discrete(Prediction::Eps);
    const auto s = *make_sigmas(ScheduleKind::Discrete, 4, m);  // t = 999, 666, 333, 0
    expect_rel(s[0], 14.6146, 5e-5, "t999");
    expect_rel(s[1], sd1_sigma_at(666), 5e-5, "t666");
    expect_rel(s[2], sd1_sigma_at(333), 5e-5, "t333");
    expect_rel(s[3], sd1_sigma_at(0), 5e-5, "t0");
    const auto s6 = *make_sigmas(ScheduleKind::Discrete, 6, m);  // step 199.8
    for (int i = 0; i < 6; ++i) expect_rel(s6[i], sd1_sigma_at(999 - 199.8 * i), 5e-5, "t6");
    const auto s1 = *make_sigmas(ScheduleKind::Discrete, 1, m);
    expect_rel(s1[0], 14.6146, 5e-5, "one step");
}

TEST(Schedules, KarrasMatchesFormula) {
    const auto m = Parameterization::discrete(Prediction::Eps);
    const auto s = *make_sigmas(ScheduleKind::Karras, 6, m);
    const double lo = std::pow(m.sigma_min(), 1 / 7.0), hi = std::pow(m.sigma_max(), 1 / 7.0);
    for (int i = 0; i < 6; ++i)
        expect_rel(s[i], std::pow(hi + i / 5.0 * (lo - hi), 7.0), 1e-5, "karras");
    EXPECT_NEAR(s[0], 14.6146f, 5e-4f);
    EXPECT_NEAR(s[5], 0.0292f, 5e-5f);
}

TEST(Schedules, ExponentialIsGeometric) {
    const auto m = Parameterization::discrete(Prediction::Eps);
    const auto s = *make_sigmas(ScheduleKind::Exponential, 8, m);
    const double ratio = std::pow(m.sigma_min() / static_cast<double>(m.sigma_max()), 1 / 7.0);
    for (int i = 0; i < 8; ++i) expect_rel(s[i], m.sigma_max() * std::pow(ratio, i), 1e-5, "exp");
}

TEST(Schedules, AysUsesPublishedTables) {
    const auto m = Parameterization::discrete(Prediction::Eps);
    const auto s10 = *make_sigmas(ScheduleKind::Ays, 10, m);
    const auto& table = ays_table(AysModel::Sd1);
    for (int i = 0; i < 10; ++i) EXPECT_FLOAT_EQ(s10[i], table[i]);
    // Other step counts: log-linear interpolation of the table; the ends are kept.
    const auto s20 = *make_sigmas(ScheduleKind::Ays, 20, m);
    EXPECT_NEAR(s20[0], table[0], 1e-4f);
    // Point 2 of 21 sits at 0.1 of the way: exactly table entry 1 in log space.
    EXPECT_NEAR(s20[2], table[1], 1e-4f);
    EXPECT_NEAR(std::log(s20[1]), 0.5 * (std::log(table[0]) + std::log(table[1])), 1e-4);
    ScheduleOptions xl;
    xl.ays = AysModel::Sdxl;
    EXPECT_FLOAT_EQ((*make_sigmas(ScheduleKind::Ays, 10, m, xl))[1], 6.3184485287f);
}

TEST(Schedules, GitsUsesTableUpTo20Steps) {
    const auto m = Parameterization::discrete(Prediction::Eps);
    const auto s4 = *make_sigmas(ScheduleKind::Gits, 4, m);
    EXPECT_FLOAT_EQ(s4[0], 14.61464119f);
    EXPECT_FLOAT_EQ(s4[1], 2.36326075f);
    EXPECT_FLOAT_EQ(s4[3], 0.36617002f);
    const auto s30 = *make_sigmas(ScheduleKind::Gits, 30, m);
    EXPECT_NEAR(s30[0], 14.61464119f, 1e-4f);
}

TEST(Schedules, TimestepBasedSchedules) {
    const auto m = Parameterization::discrete(Prediction::Eps);
    // sgm_uniform: timesteps linspace(999, 0, n + 1) without the last.
    const auto sgm = *make_sigmas(ScheduleKind::SgmUniform, 4, m);
    for (int i = 0; i < 4; ++i) expect_rel(sgm[i], sd1_sigma_at(999 - 249.75 * i), 5e-5, "sgm");
    // simple: every (1000/n)-th timestep from the top.
    const auto simple = *make_sigmas(ScheduleKind::Simple, 4, m);
    for (int i = 0; i < 4; ++i) expect_rel(simple[i], sd1_sigma_at(999 - 250 * i), 5e-5, "simple");
    // lcm: 50-step training grid, timesteps 999, 759, 499, 259 for 4 steps.
    const auto lcm = *make_sigmas(ScheduleKind::Lcm, 4, m);
    const int lcm_t[] = {999, 759, 499, 259};
    for (int i = 0; i < 4; ++i) expect_rel(lcm[i], sd1_sigma_at(lcm_t[i]), 5e-5, "lcm");
    // smoothstep: t = round(smoothstep(1 - i/n) * 999).
    const auto ss = *make_sigmas(ScheduleKind::Smoothstep, 4, m);
    for (int i = 0; i < 4; ++i) {
        const double u = 1.0 - i / 4.0;
        expect_rel(ss[i], sd1_sigma_at(std::round(u * u * (3 - 2 * u) * 999)), 5e-5, "smoothstep");
    }
}

TEST(Schedules, RejectsBadStepCounts) {
    const auto m = Parameterization::discrete(Prediction::Eps);
    for (const auto& name : schedule_names()) {
        const ScheduleKind kind = *parse_schedule(name);
        for (int steps : {0, -1, 10001}) {
            const auto s = make_sigmas(kind, steps, m);
            ASSERT_FALSE(s.ok()) << name << " " << steps;
            EXPECT_NE(s.status().message().find("steps"), std::string::npos);
        }
    }
}

TEST(Schedules, Names) {
    for (const auto& name : schedule_names()) {
        const auto kind = parse_schedule(name);
        ASSERT_TRUE(kind.ok()) << name;
        EXPECT_EQ(schedule_name(*kind), name);
        EXPECT_EQ(*parse_schedule(schedule_a1111_name(*kind)), *kind);
    }
    EXPECT_EQ(*parse_schedule("Karras"), ScheduleKind::Karras);
    EXPECT_EQ(*parse_schedule("SGM Uniform"), ScheduleKind::SgmUniform);
    EXPECT_EQ(*parse_schedule("Align Your Steps"), ScheduleKind::Ays);
    EXPECT_EQ(*parse_schedule("normal"), ScheduleKind::Discrete);
    EXPECT_FALSE(parse_schedule("cosine").ok());
    EXPECT_EQ(*parse_schedule("flux"), ScheduleKind::Flux);
    EXPECT_EQ(*parse_schedule("flux2"), ScheduleKind::Flux2);
    EXPECT_EQ(schedule_names().size(), 12u);
}

// stable-diffusion.cpp's flux schedule: mu from the latent's pixel count (64 for a 64x64
// image), e^mu / (e^mu + 1/t - 1) at t = 1, 3/4, 1/2, 1/4, then 0.
TEST(Schedules, FluxShiftsByLatentSize) {
    const auto m = Parameterization::flux_flow(1.15f);
    ScheduleOptions o;
    o.image_seq_len = 64;
    EXPECT_NEAR(flux_schedule_mu(o), 0.4675f, 1e-6f);
    auto s = make_sigmas(ScheduleKind::Flux, 4, m, o);
    ASSERT_TRUE(s.ok()) << s.status().message();
    const std::vector<float> want = {1.0f, 0.827229f, 0.614792f, 0.347258f, 0.0f};
    ASSERT_EQ(s->size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR((*s)[i], want[i], 1e-5f) << i;
    o.image_seq_len = 4096;  // a 512x512 image
    EXPECT_NEAR(flux_schedule_mu(o), 1.15f, 1e-6f);
    o.image_seq_len = 256;
    EXPECT_NEAR(flux_schedule_mu(o), 0.5f, 1e-6f);
    o.flux_mu = 3.0f;  // --flow-shift
    EXPECT_EQ(flux_schedule_mu(o), 3.0f);
    EXPECT_FALSE(make_sigmas(ScheduleKind::Flux, 4, Parameterization::discrete(), o).ok());
}

// FLUX.2's schedule (the reference's defaults for klein): a 64x64 image is (64/16)^2 = 16
// tokens; mu interpolates between the 10- and 200-step lines by the step count.
TEST(Schedules, Flux2EmpiricalMu) {
    const auto m = Parameterization::flow(1.0f);
    ScheduleOptions o;
    o.image_seq_len = 16;
    auto s = make_sigmas(ScheduleKind::Flux2, 4, m, o);
    ASSERT_TRUE(s.ok()) << s.status().message();
    const std::vector<float> want = {1.0f, 0.9545f, 0.8749f, 0.6999f, 0.0f};
    ASSERT_EQ(s->size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR((*s)[i], want[i], 1e-4f) << i;
    // More steps, a lower mu; above 4300 tokens the 200-step line alone.
    EXPECT_GT(flux2_schedule_mu(o, 4), flux2_schedule_mu(o, 50));
    o.image_seq_len = 4096;  // 1024x1024
    EXPECT_NEAR(flux2_schedule_mu(o, 200), 0.00016927f * 4096 + 0.45666666f, 1e-5f);
    o.image_seq_len = 5000;
    EXPECT_EQ(flux2_schedule_mu(o, 4), flux2_schedule_mu(o, 50));
    const float mu = flux2_schedule_mu(o, 4);
    o.flux_mu = 2.0f;  // --flow-shift leaves it alone, as in the reference
    EXPECT_EQ(flux2_schedule_mu(o, 4), mu);
    EXPECT_FALSE(make_sigmas(ScheduleKind::Flux2, 4, Parameterization::discrete(), o).ok());
}

TEST(Schedules, ParseSigmas) {
    auto s = parse_sigmas("14.6,7.1, 3.2 ,0");
    ASSERT_TRUE(s.ok()) << s.status().message();
    EXPECT_EQ(*s, (std::vector<float>{14.6f, 7.1f, 3.2f, 0.0f}));
    EXPECT_TRUE(parse_sigmas("[1.0, 0.5]").ok());
    EXPECT_FALSE(parse_sigmas("").ok());
    EXPECT_FALSE(parse_sigmas("1.0").ok());
    EXPECT_FALSE(parse_sigmas("1.0,abc,0").ok());
    EXPECT_FALSE(parse_sigmas("1.0,nan,0").ok());
    EXPECT_FALSE(parse_sigmas("1.0,-0.5").ok());
    EXPECT_FALSE(parse_sigmas("1.0,2.0,0").ok());
    EXPECT_FALSE(parse_sigmas("1.0,inf").ok());
}

TEST(Schedules, Img2imgTailAsStableDiffusionCpp) {
    const auto m = Parameterization::discrete(Prediction::Eps);
    const auto full5 = *make_sigmas(ScheduleKind::Discrete, 5, m);
    // steps 5, strength 0.6 (the golden img2img case): t_enc = 3, keep sigmas[1:].
    const auto tail = img2img_sigmas(full5, 0.6f);
    ASSERT_EQ(tail.size(), 5u);
    EXPECT_EQ(tail.front(), full5[1]);
    EXPECT_EQ(tail.back(), 0.0f);
    EXPECT_EQ(img2img_sigmas(full5, 1.0f), full5);
    EXPECT_EQ(img2img_sigmas(full5, 0.99f).size(), 6u);  // t_enc 4 -> start 0
    EXPECT_EQ(img2img_sigmas(full5, 0.0f).size(), 2u);   // one step is always left
    EXPECT_EQ(img2img_sigmas(full5, -3.0f).size(), 2u);
    const auto full10 = *make_sigmas(ScheduleKind::Discrete, 10, m);
    EXPECT_EQ(img2img_sigmas(full10, 0.5f).size(), 7u);  // t_enc 5 -> sigmas[4:]
    const auto full20 = *make_sigmas(ScheduleKind::Karras, 20, m);
    const auto t20 = img2img_sigmas(full20, 0.05f);  // t_enc 1 -> sigmas[18:]
    ASSERT_EQ(t20.size(), 3u);
    EXPECT_EQ(t20[0], full20[18]);
}

}  // namespace
}  // namespace ggdiff::sampling
