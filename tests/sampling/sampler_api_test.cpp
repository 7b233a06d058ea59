// The sampler API's contract: names, defaults, input validation with clear errors,
// progress and cancellation, and the CFG++ plumbing.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "sampling/philox_rng.h"
#include "sampling/samplers.h"
#include "toy_models.h"

namespace ggdiff::sampling {
namespace {

using testing::Gaussian;

TEST(SamplerNames, EveryNameRoundTrips) {
    const auto names = sampler_names();
    ASSERT_EQ(names.size(), 18u);
    for (SamplerKind kind : all_samplers()) {
        EXPECT_EQ(*parse_sampler(sampler_cli_name(kind)), kind) << sampler_cli_name(kind);
        EXPECT_EQ(*parse_sampler(sampler_a1111_name(kind)), kind) << sampler_a1111_name(kind);
    }
    const std::vector<std::string> mission = {
        "euler",     "euler_a",       "heun",   "dpm2",    "dpm++2s_a",    "dpm++2m",
        "dpm++2mv2", "dpm++2m_sde",   "ipndm",  "ipndm_v", "lcm",          "ddim_trailing",
        "tcd",       "res_multistep", "res_2s", "er_sde",  "euler_cfg_pp", "euler_a_cfg_pp"};
    EXPECT_EQ(names, mission);
}

TEST(SamplerNames, A1111AndKDiffusionSpellings) {
    EXPECT_EQ(*parse_sampler("Euler a"), SamplerKind::EulerA);
    EXPECT_EQ(*parse_sampler("EULER_A"), SamplerKind::EulerA);
    EXPECT_EQ(*parse_sampler("DPM++ 2M"), SamplerKind::Dpmpp2m);
    EXPECT_EQ(*parse_sampler("DPM++ 2M SDE"), SamplerKind::Dpmpp2mSde);
    EXPECT_EQ(*parse_sampler("dpm++ 2m sde"), SamplerKind::Dpmpp2mSde);
    EXPECT_EQ(*parse_sampler("k_dpmpp_2m_sde"), SamplerKind::Dpmpp2mSde);
    EXPECT_EQ(*parse_sampler("dpmpp_2m"), SamplerKind::Dpmpp2m);
    EXPECT_EQ(*parse_sampler("DPM++ 2S a"), SamplerKind::Dpmpp2sA);
    EXPECT_EQ(*parse_sampler("k_euler_ancestral"), SamplerKind::EulerA);
    EXPECT_EQ(*parse_sampler("DDIM"), SamplerKind::DdimTrailing);
    EXPECT_EQ(*parse_sampler("Euler a CFG++"), SamplerKind::EulerACfgPp);
    EXPECT_EQ(*parse_sampler("ER-SDE"), SamplerKind::ErSde);
    EXPECT_STREQ(sampler_a1111_name(SamplerKind::EulerA), "Euler a");
    EXPECT_STREQ(sampler_cli_name(SamplerKind::EulerA), "euler_a");
    for (const char* bad : {"", "dpm++3m", "euler_b", "k_"}) {
        const auto r = parse_sampler(bad);
        ASSERT_FALSE(r.ok()) << bad;
        EXPECT_NE(r.status().message().find("unknown sampling method"), std::string::npos);
        EXPECT_NE(r.status().message().find("dpm++2m_sde"), std::string::npos);  // lists the names
    }
}

TEST(SamplerDefaults, EtaAndSchedule) {
    for (SamplerKind k : {SamplerKind::EulerA, SamplerKind::ErSde, SamplerKind::Dpmpp2sA,
                          SamplerKind::Dpmpp2mSde, SamplerKind::EulerACfgPp})
        EXPECT_EQ(default_eta(k), 1.0f) << sampler_cli_name(k);
    for (SamplerKind k : {SamplerKind::DdimTrailing, SamplerKind::Tcd, SamplerKind::ResMultistep,
                          SamplerKind::Res2s, SamplerKind::Euler, SamplerKind::Dpmpp2m})
        EXPECT_EQ(default_eta(k), 0.0f) << sampler_cli_name(k);
    const auto sd1 = Parameterization::discrete();
    EXPECT_EQ(default_schedule(SamplerKind::Lcm, sd1), ScheduleKind::Lcm);
    EXPECT_EQ(default_schedule(SamplerKind::Tcd, sd1), ScheduleKind::Lcm);
    EXPECT_EQ(default_schedule(SamplerKind::DdimTrailing, sd1), ScheduleKind::Simple);
    EXPECT_EQ(default_schedule(SamplerKind::EulerA, sd1), ScheduleKind::Discrete);
    EXPECT_EQ(default_schedule(SamplerKind::Euler, Parameterization::edm_v()),
              ScheduleKind::Exponential);
    EXPECT_TRUE(needs_uncond(SamplerKind::EulerCfgPp));
    EXPECT_FALSE(needs_uncond(SamplerKind::Euler));
}

Status run_with(SamplerKind kind, std::vector<float> sigmas, float eta = NAN,
                std::vector<float> x = std::vector<float>(4, 1.0f)) {
    PhiloxRng rng(1);
    SamplerOptions opt;
    opt.eta = eta;
    return sample(kind, testing::denoiser_for(Gaussian{}), x, sigmas, rng, opt);
}

void expect_error(const Status& st, const std::string& fragment, SamplerKind kind) {
    ASSERT_FALSE(st.ok()) << sampler_cli_name(kind) << " accepted it (" << fragment << ")";
    EXPECT_NE(st.message().find(fragment), std::string::npos) << st.message();
    // The message names the sampler so a user can tell which setting was wrong.
    EXPECT_NE(st.message().find(sampler_cli_name(kind)), std::string::npos) << st.message();
}

TEST(SamplerValidation, EverySamplerRejectsNonsense) {
    const std::vector<float> good = {10.0f, 1.0f, 0.0f};
    for (SamplerKind kind : all_samplers()) {
        ASSERT_TRUE(run_with(kind, good).ok()) << sampler_cli_name(kind);
        expect_error(run_with(kind, {}), "at least 2", kind);  // zero steps
        expect_error(run_with(kind, {5.0f}), "at least 2", kind);
        expect_error(run_with(kind, {10.0f, NAN, 0.0f}), "not finite", kind);
        expect_error(run_with(kind, {INFINITY, 1.0f, 0.0f}), "not finite", kind);
        expect_error(run_with(kind, {10.0f, -1.0f, 0.0f}), "negative", kind);
        expect_error(run_with(kind, {1.0f, 10.0f, 0.0f}), "must not increase", kind);
        expect_error(run_with(kind, {10.0f, 0.0f, 0.0f}), "only the final sigma may be 0", kind);
        expect_error(run_with(kind, good, NAN, {}), "latent is empty", kind);
        expect_error(run_with(kind, good, NAN, {1.0f, NAN}), "non-finite", kind);
        if (uses_eta(kind)) {
            expect_error(run_with(kind, good, -0.5f), "eta", kind);
            expect_error(run_with(kind, good, INFINITY), "eta", kind);
        } else {
            EXPECT_TRUE(run_with(kind, good, -0.5f).ok())
                << "eta is not read by " << sampler_cli_name(kind);
        }
    }
    expect_error(run_with(SamplerKind::Tcd, good, 1.5f), "[0, 1]", SamplerKind::Tcd);
}

TEST(SamplerValidation, DenoiserFailuresAreReported) {
    const std::vector<float> sigmas = {10.0f, 1.0f, 0.0f};
    for (SamplerKind kind : all_samplers()) {
        PhiloxRng rng(1);
        std::vector<float> x(4, 1.0f);
        DenoiseFn failing = [](const std::vector<float>&, float, DenoiseStep at,
                               bool) -> Result<DenoiseResult> {
            if (at.index == 1) return Status::Error("graph compute failed");
            DenoiseResult r;
            r.denoised.assign(4, 0.0f);
            r.uncond_denoised.assign(4, 0.0f);
            return r;
        };
        Status st = sample(kind, failing, x, sigmas, rng);
        expect_error(st, "graph compute failed", kind);
        EXPECT_NE(st.message().find("step 1"), std::string::npos) << st.message();

        DenoiseFn short_result = [](const std::vector<float>&, float, DenoiseStep,
                                    bool) -> Result<DenoiseResult> {
            DenoiseResult r;
            r.denoised.assign(3, 0.0f);
            r.uncond_denoised.assign(3, 0.0f);
            return r;
        };
        x.assign(4, 1.0f);
        expect_error(sample(kind, short_result, x, sigmas, rng), "expected 4", kind);
    }
    // A CFG++ sampler needs the unconditional estimate.
    DenoiseFn no_uncond = [](const std::vector<float>& x, float, DenoiseStep,
                             bool) -> Result<DenoiseResult> {
        DenoiseResult r;
        r.denoised = x;
        return r;
    };
    PhiloxRng rng(1);
    std::vector<float> x(4, 1.0f);
    expect_error(sample(SamplerKind::EulerCfgPp, no_uncond, x, sigmas, rng), "unconditional",
                 SamplerKind::EulerCfgPp);
    expect_error(sample(SamplerKind::Euler, DenoiseFn{}, x, sigmas, rng), "no denoiser",
                 SamplerKind::Euler);
}

TEST(SamplerProgress, ReportsEveryStepAndCancels) {
    const Gaussian g;
    const auto sigmas = *make_sigmas(ScheduleKind::Karras, 6, Parameterization::discrete());
    for (SamplerKind kind : all_samplers()) {
        std::vector<std::pair<int, int>> seen;
        SamplerOptions opt;
        opt.on_step = [&](int step, int total) {
            seen.emplace_back(step, total);
            return true;
        };
        PhiloxRng rng(1);
        std::vector<float> x(8, 3.0f);
        ASSERT_TRUE(sample(kind, testing::denoiser_for(g), x, sigmas, rng, opt).ok());
        ASSERT_EQ(seen.size(), 6u) << sampler_cli_name(kind);
        for (int i = 0; i < 6; ++i) EXPECT_EQ(seen[i], std::make_pair(i + 1, 6));

        int calls = 0;
        opt.on_step = [](int step, int) { return step < 2; };
        x.assign(8, 3.0f);
        const Status st = sample(kind, testing::denoiser_for(g, &calls), x, sigmas, rng, opt);
        expect_error(st, "cancelled after step 2/6", kind);
        EXPECT_LE(calls, 4) << sampler_cli_name(kind);  // stopped early (2 evals per step at most)
    }
}

// The evaluations a sampler asks for, in order.
std::vector<DenoiseStep> evaluations(SamplerKind kind, const std::vector<float>& sigmas,
                                     const Parameterization* model) {
    std::vector<DenoiseStep> seen;
    DenoiseFn den = [&seen](const std::vector<float>& x, float, DenoiseStep at,
                            bool) -> Result<DenoiseResult> {
        seen.push_back(at);
        DenoiseResult r;
        for (float v : x) r.denoised.push_back(0.5f * v);
        r.uncond_denoised = r.denoised;
        return r;
    };
    PhiloxRng rng(1);
    std::vector<float> x(4, 1.0f);
    SamplerOptions opt;
    opt.model = model;
    EXPECT_TRUE(sample(kind, den, x, sigmas, rng, opt).ok()) << sampler_cli_name(kind);
    return seen;
}

std::string describe(const std::vector<DenoiseStep>& seen) {
    std::string s;
    for (const DenoiseStep& at : seen) s += std::to_string(at.index) + (at.predictor ? "p " : " ");
    return s;
}

// The samplers with two evaluations per step mark the first one of each step as the
// predictor (no skip-layer guidance there, as stable-diffusion.cpp passes it a negated
// step), also on the last step where the second is not taken; the others never do.
TEST(SamplerSteps, TwoStageSamplersMarkTheirPredictorEvaluation) {
    const std::vector<float> sigmas = {10.0f, 3.0f, 1.0f, 0.0f};
    for (SamplerKind kind : all_samplers()) {
        const std::vector<DenoiseStep> seen = evaluations(kind, sigmas, nullptr);
        const bool two_stage = kind == SamplerKind::Heun || kind == SamplerKind::Dpm2 ||
                               kind == SamplerKind::Dpmpp2sA || kind == SamplerKind::Res2s;
        const std::string expected = two_stage ? "0p 0 1p 1 2p " : "0 1 2 ";
        EXPECT_EQ(describe(seen), expected) << sampler_cli_name(kind);
    }
}

// Flow models: dpm++2s_a's one evaluation at sigma 1 is the step's final one (sd.cpp's
// opt_first_step passes it a positive step); below sigma 1 it has a predictor again.
TEST(SamplerSteps, FlowDpmpp2sAtSigmaOneHasNoPredictor) {
    const Parameterization flow = Parameterization::flow(3.0f);
    const std::vector<float> sigmas = {1.0f, 0.6f, 0.3f, 0.0f};
    EXPECT_EQ(describe(evaluations(SamplerKind::Dpmpp2sA, sigmas, &flow)), "0 1p 1 2p ");
    EXPECT_EQ(describe(evaluations(SamplerKind::Heun, sigmas, &flow)), "0p 0 1p 1 2p ");
    EXPECT_EQ(describe(evaluations(SamplerKind::Res2s, sigmas, &flow)), "0p 0 1p 1 2p ");
    EXPECT_EQ(describe(evaluations(SamplerKind::Euler, sigmas, &flow)), "0 1 2 ");
}

// CFG++ on one step with distinct cond/uncond estimates: x' = D + sigma' (x - U) / sigma.
TEST(SamplerCfgPp, UsesTheUnconditionalDirection) {
    DenoiseFn den = [](const std::vector<float>& x, float, DenoiseStep,
                       bool need) -> Result<DenoiseResult> {
        EXPECT_TRUE(need);
        DenoiseResult r;
        for (float v : x) {
            r.denoised.push_back(0.5f * v);
            r.uncond_denoised.push_back(0.25f * v);
        }
        return r;
    };
    PhiloxRng rng(1);
    std::vector<float> x = {2.0f, -4.0f};
    ASSERT_TRUE(sample(SamplerKind::EulerCfgPp, den, x, {4.0f, 1.0f}, rng).ok());
    EXPECT_FLOAT_EQ(x[0], 1.0f + 1.0f * (2.0f - 0.5f) / 4.0f);
    EXPECT_FLOAT_EQ(x[1], -2.0f + 1.0f * (-4.0f + 1.0f) / 4.0f);
}

}  // namespace
}  // namespace ggdiff::sampling
