// Step caching (sampling/step_cache.h) without a model: each mode's decisions on a given
// sigma schedule with synthetic denoiser outputs, and the option parsing.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "sampling/parameterization.h"
#include "sampling/samplers.h"
#include "sampling/schedules.h"
#include "sampling/step_cache.h"

namespace ggdiff::sampling {
namespace {

constexpr size_t kN = 64;  // latent floats

CacheParams params(CacheMode mode, const std::string& options = "") {
    CacheParams p;
    p.mode = mode;
    Status st = apply_cache_options(options, p);
    EXPECT_TRUE(st.ok()) << st.message();
    st = check_cache_params(p);
    EXPECT_TRUE(st.ok()) << st.message();
    return p;
}

std::vector<float> sd1_sigmas(int steps) {
    auto s = make_sigmas(ScheduleKind::Discrete, steps, Parameterization::discrete());
    EXPECT_TRUE(s.ok());
    return *s;
}

std::vector<float> flow_sigmas(int steps) {
    auto s = make_sigmas(ScheduleKind::Discrete, steps, Parameterization::flow(3.0f));
    EXPECT_TRUE(s.ok());
    return *s;
}

// A synthetic network: output = a * input + b (per condition), and an input that drifts a
// little each step, as a sampled latent does.
std::vector<float> input_at(int step) {
    std::vector<float> x(kN);
    for (size_t i = 0; i < kN; ++i) {
        x[i] = std::sin(0.37f * static_cast<float>(i)) * (1.0f - 0.08f * static_cast<float>(step));
    }
    return x;
}

std::vector<float> network(const std::vector<float>& x, float a, float b) {
    std::vector<float> y(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = a * x[i] + b;
    return y;
}

struct CacheRun {
    std::vector<bool> skipped;  // per step
    int runs = 0;               // network calls
    std::string summary;
};

// Drives `cache` the way the pipeline does for a one-evaluation-per-step sampler with a
// prompt and a negative prompt; `inputs(step)` gives the network input.
CacheRun drive(StepCache& cache, const std::vector<float>& sigmas,
               const std::function<std::vector<float>(int)>& inputs = input_at) {
    CacheRun r;
    const int cond = 0, uncond = 0;  // two distinct addresses
    cache.begin(sigmas);
    const int steps = static_cast<int>(sigmas.size()) - 1;
    for (int i = 0; i < steps; ++i) {
        const std::vector<float> x = inputs(i);
        cache.begin_step(DenoiseStep{i, false}, sigmas[static_cast<size_t>(i)]);
        std::vector<float> oc, ou;
        const bool rc = cache.reuse(&cond, x, oc);
        const bool ru = cache.reuse(&uncond, x, ou);
        EXPECT_EQ(rc, ru) << "step " << i << ": the conditions decide together";
        if (!rc) {
            oc = network(x, 0.5f, 0.1f);
            cache.store(&cond, x, oc);
            ++r.runs;
        }
        if (!ru) {
            ou = network(x, 0.4f, -0.2f);
            cache.store(&uncond, x, ou);
            ++r.runs;
        }
        r.skipped.push_back(cache.step_skipped());
    }
    r.summary = cache.summary(static_cast<size_t>(steps));
    return r;
}

int count(const std::vector<bool>& v) {
    int n = 0;
    for (bool b : v) n += b ? 1 : 0;
    return n;
}

TEST(StepCache, UCacheSkipsEveryActiveStepFromTheThirdWithAHugeThreshold) {
    // The sd1_extras "ucache" case: threshold far above the decision boundary, the whole
    // schedule (end=1 leaves the last step inactive): steps 3..7 of 8 reuse.
    StepCache cache(params(CacheMode::UCache, "threshold=30,start=0,end=1,reset=0"),
                    DenoiserArch::UNet, Parameterization::discrete(), SamplerKind::EulerA);
    const CacheRun r = drive(cache, sd1_sigmas(8));
    EXPECT_EQ(r.skipped, (std::vector<bool>{false, false, true, true, true, true, true, false}));
    EXPECT_EQ(cache.skipped(), 5);
    EXPECT_EQ(r.runs, 2 * 3);
    EXPECT_EQ(r.summary, "UCache skipped 5/8 steps (2.67x estimated speedup)");
}

TEST(StepCache, UCacheReusesEachConditionsOwnResidual) {
    StepCache cache(params(CacheMode::UCache, "threshold=30,start=0,end=1"), DenoiserArch::UNet,
                    Parameterization::discrete(), SamplerKind::Euler);
    const std::vector<float> sigmas = sd1_sigmas(4);
    cache.begin(sigmas);
    const int cond = 0, uncond = 0;
    for (int i = 0; i < 2; ++i) {
        const std::vector<float> x = input_at(i);
        cache.begin_step(DenoiseStep{i, false}, sigmas[static_cast<size_t>(i)]);
        std::vector<float> o;
        ASSERT_FALSE(cache.reuse(&cond, x, o));
        ASSERT_FALSE(cache.reuse(&uncond, x, o));
        cache.store(&cond, x, network(x, 0.5f, 0.1f));
        cache.store(&uncond, x, network(x, 0.4f, -0.2f));
    }
    // Step 2 reuses: input + (output - input) of step 1, per condition.
    const std::vector<float> x1 = input_at(1), x2 = input_at(2);
    const std::vector<float> y1c = network(x1, 0.5f, 0.1f), y1u = network(x1, 0.4f, -0.2f);
    cache.begin_step(DenoiseStep{2, false}, sigmas[2]);
    std::vector<float> oc, ou;
    ASSERT_TRUE(cache.reuse(&cond, x2, oc));
    ASSERT_TRUE(cache.reuse(&uncond, x2, ou));
    for (size_t k = 0; k < kN; ++k) {
        EXPECT_FLOAT_EQ(oc[k], x2[k] + (y1c[k] - x1[k]));
        EXPECT_FLOAT_EQ(ou[k], x2[k] + (y1u[k] - x1[k]));
    }
}

TEST(StepCache, UCacheThresholdZeroAndWindowLimitSkipping) {
    {
        StepCache cache(params(CacheMode::UCache, "threshold=0"), DenoiserArch::UNet,
                        Parameterization::discrete(), SamplerKind::Euler);
        const CacheRun r = drive(cache, sd1_sigmas(10));
        EXPECT_EQ(count(r.skipped), 0);
        EXPECT_EQ(r.summary, "UCache completed without skipping steps");
    }
    {
        // Defaults start 0.15, end 0.95 on 10 steps: active while sigmas[1] >= s > sigmas[9],
        // steps 1..8; the first two of them compute.
        StepCache cache(params(CacheMode::UCache, "threshold=1000"), DenoiserArch::UNet,
                        Parameterization::discrete(), SamplerKind::Euler);
        const CacheRun r = drive(cache, sd1_sigmas(10));
        EXPECT_EQ(r.skipped, (std::vector<bool>{false, false, false, true, true, true, true, true,
                                                true, false}));
    }
}

TEST(StepCache, PredictorEvaluationsTakeNoPart) {
    StepCache cache(params(CacheMode::UCache, "threshold=30,start=0,end=1"), DenoiserArch::UNet,
                    Parameterization::discrete(), SamplerKind::Heun);
    const std::vector<float> sigmas = sd1_sigmas(6);
    cache.begin(sigmas);
    const int cond = 0;
    int skipped_final = 0;
    for (int i = 0; i < 5; ++i) {
        for (bool predictor : {true, false}) {
            const std::vector<float> x = input_at(2 * i + (predictor ? 0 : 1));
            cache.begin_step(DenoiseStep{i, predictor}, sigmas[static_cast<size_t>(i)]);
            std::vector<float> o;
            const bool reused = cache.reuse(&cond, x, o);
            if (predictor) {
                EXPECT_FALSE(reused) << "predictor of step " << i;
            }
            if (!reused) cache.store(&cond, x, network(x, 0.5f, 0.1f));
            if (!predictor && reused) ++skipped_final;
        }
    }
    // Of the first 5 of 6 steps (all inside the window), 0 and 1 compute, 2..4 reuse.
    EXPECT_EQ(skipped_final, 3);
    EXPECT_EQ(cache.skipped(), 3);
}

TEST(StepCache, ModesOfTheOtherArchitectureChangeNothing) {
    for (CacheMode m :
         {CacheMode::EasyCache, CacheMode::DbCache, CacheMode::TaylorSeer, CacheMode::CacheDit}) {
        StepCache cache(params(m, "threshold=1000"), DenoiserArch::UNet,
                        Parameterization::discrete(), SamplerKind::Euler);
        const CacheRun r = drive(cache, sd1_sigmas(8));
        EXPECT_FALSE(cache.enabled()) << cache_mode_name(m);
        EXPECT_EQ(count(r.skipped), 0) << cache_mode_name(m);
        EXPECT_EQ(r.summary, "");
    }
    StepCache ucache(params(CacheMode::UCache, "threshold=1000"), DenoiserArch::DiT,
                     Parameterization::flow(3.0f), SamplerKind::Euler);
    const CacheRun r = drive(ucache, flow_sigmas(8));
    EXPECT_FALSE(ucache.enabled());
    EXPECT_EQ(count(r.skipped), 0);
}

TEST(StepCache, EasyCacheActsBetweenItsSchedulePercentsOnADiT) {
    const Parameterization model = Parameterization::flow(3.0f);
    const std::vector<float> sigmas = flow_sigmas(12);
    StepCache cache(params(CacheMode::EasyCache, "threshold=1000"), DenoiserArch::DiT, model,
                    SamplerKind::Euler);
    const CacheRun r = drive(cache, sigmas);
    // The window comes from the model's t -> sigma map at t = (1 - p) * 999.
    const float start = model.t_to_sigma(0.85f * 999.0f), end = model.t_to_sigma(0.05f * 999.0f);
    std::vector<bool> want;
    int active = 0;
    for (int i = 0; i < 12; ++i) {
        const float s = sigmas[static_cast<size_t>(i)];
        const bool in = s <= start && s > end;
        want.push_back(in && active >= 2);
        if (in) ++active;
    }
    EXPECT_GE(count(want), 3);
    EXPECT_EQ(r.skipped, want);
    StepCache none(params(CacheMode::EasyCache, "threshold=0"), DenoiserArch::DiT, model,
                   SamplerKind::Euler);
    EXPECT_EQ(count(drive(none, sigmas).skipped), 0);
}

// Inputs that shrink by 10% each step: a relative change of 0.1 from one step to the next.
std::vector<float> shrinking(int step) {
    std::vector<float> x = input_at(0);
    for (float& v : x) v *= std::pow(0.9f, static_cast<float>(step));
    return x;
}

TEST(StepCache, CacheDitDecidesByTheRelativeInputChangeScaledByFnAndBn) {
    const Parameterization model = Parameterization::flow(3.0f);
    const std::vector<float> sigmas = flow_sigmas(20);
    auto skipped = [&](CacheMode m, const std::string& opts) {
        StepCache cache(params(m, opts), DenoiserArch::DiT, model, SamplerKind::Euler);
        return drive(cache, sigmas, shrinking).skipped;
    };
    // Window: sigmas[3] >= s > sigmas[19], steps 3..18. 0.1 > 0.08: nothing reused.
    EXPECT_EQ(count(skipped(CacheMode::CacheDit, "")), 0);
    // Fn 58 doubles 0.06 to 0.12: one step after each computed one is reused (the change
    // since the last computed input then reaches 0.19).
    const std::vector<bool> alt = skipped(CacheMode::CacheDit, "threshold=0.06,Fn=58");
    std::vector<bool> want(20, false);
    for (int i = 4; i <= 18; i += 2) want[static_cast<size_t>(i)] = true;
    EXPECT_EQ(alt, want);
    // Bn 10 scales 0.12 by 0.7: 0.084 < 0.1, nothing again.
    EXPECT_EQ(count(skipped(CacheMode::CacheDit, "threshold=0.06,Fn=58,Bn=10")), 0);
    // dbcache and taylorseer decide alike (one condition-level cache in the reference).
    EXPECT_EQ(skipped(CacheMode::DbCache, "threshold=0.06,Fn=58"), want);
    EXPECT_EQ(skipped(CacheMode::TaylorSeer, "threshold=0.06,Fn=58"), want);
}

// The denoised estimates of a one-evaluation-per-step run through spectrum; `h(c)` is the
// computed estimate of evaluation c.
struct SpectrumRun {
    std::vector<bool> forecast;
    std::vector<std::vector<float>> outputs;
};

SpectrumRun drive_spectrum(StepCache& cache, int steps,
                           const std::function<std::vector<float>(int)>& h) {
    SpectrumRun r;
    std::vector<float> sigmas(static_cast<size_t>(steps) + 1);
    for (int i = 0; i <= steps; ++i) sigmas[static_cast<size_t>(i)] = 1.0f - i / float(steps);
    cache.begin(sigmas);
    for (int c = 0; c < steps; ++c) {
        std::vector<float> d;
        const bool f = cache.forecast(d);
        if (!f) {
            d = h(c);
            cache.record(d);
        }
        r.forecast.push_back(f);
        r.outputs.push_back(d);
    }
    return r;
}

TEST(StepCache, SpectrumForecastsOnAGrowingWindow) {
    // The sd1_extras "spectrum" case: warmup 2, window 4 (+0.5 after each computed call past
    // warmup), stop 1: calls 2, 3, 4, 6, 7 of 8 are forecast.
    StepCache cache(params(CacheMode::Spectrum, "warmup=2,window=4,stop=1"), DenoiserArch::UNet,
                    Parameterization::discrete(), SamplerKind::EulerA);
    const SpectrumRun r = drive_spectrum(cache, 8, input_at);
    EXPECT_EQ(r.forecast, (std::vector<bool>{false, false, true, true, true, false, true, true}));
    EXPECT_EQ(cache.summary(8), "Spectrum skipped 5/8 steps (2.67x estimated speedup)");
    // Defaults (warmup 4, window 2, stop 0.9) on 20 calls.
    StepCache defaults(params(CacheMode::Spectrum), DenoiserArch::DiT, Parameterization::flow(3.0f),
                       SamplerKind::Euler);
    const SpectrumRun d = drive_spectrum(defaults, 20, input_at);
    // 0-3 warmup; window 2 -> 4 forecast, 5 computed (window 2.5 -> 2), 6 forecast, 7
    // computed (3), 8, 9 forecast, 10 computed (3.5), 11, 12, 13 computed (4), 14-16
    // forecast, 17 computed, 18+ past stop (int(0.9 * 20) = 18).
    EXPECT_EQ(d.forecast, (std::vector<bool>{false, false, false, false, true,  false, true,
                                             false, true,  true,  false, true,  true,  false,
                                             true,  true,  true,  false, false, false}));
}

TEST(StepCache, SpectrumForecastIsTheTaylorStepBlendedWithTheChebyshevFit) {
    // A linear history in tau = c/50*2-1: the Taylor step h_last + (h_last - h_prev)/2 and an
    // unregularised degree-1 fit both extrapolate along the line.
    auto line = [](int c) {
        const float tau = (static_cast<float>(c) / 50.0f) * 2.0f - 1.0f;
        std::vector<float> h(kN);
        for (size_t i = 0; i < kN; ++i) h[i] = 0.3f * static_cast<float>(i) + 2.0f * tau;
        return h;
    };
    StepCache taylor(params(CacheMode::Spectrum, "w=0,warmup=3,window=2,flex=0,stop=1"),
                     DenoiserArch::UNet, Parameterization::discrete(), SamplerKind::Euler);
    const SpectrumRun t = drive_spectrum(taylor, 6, line);
    ASSERT_TRUE(t.forecast[3]);
    for (size_t i = 0; i < kN; ++i) {
        const float want = line(2)[i] + 0.5f * (line(2)[i] - line(1)[i]);
        EXPECT_NEAR(t.outputs[3][i], want, 1e-5f);
    }
    StepCache cheb(params(CacheMode::Spectrum, "w=1,m=1,lam=0,warmup=3,window=2,flex=0,stop=1"),
                   DenoiserArch::UNet, Parameterization::discrete(), SamplerKind::Euler);
    const SpectrumRun c = drive_spectrum(cheb, 6, line);
    ASSERT_TRUE(c.forecast[3]);
    for (size_t i = 0; i < kN; ++i) EXPECT_NEAR(c.outputs[3][i], line(3)[i], 1e-2f);
}

TEST(StepCache, SpectrumIsOffForCfgPlusPlusSamplers) {
    StepCache cache(params(CacheMode::Spectrum, "warmup=2,window=4,stop=1"), DenoiserArch::UNet,
                    Parameterization::discrete(), SamplerKind::EulerACfgPp);
    const SpectrumRun r = drive_spectrum(cache, 8, input_at);
    EXPECT_FALSE(cache.enabled());
    for (bool f : r.forecast) EXPECT_FALSE(f);
}

TEST(StepCache, BeginRestartsTheCacheForTheNextItem) {
    StepCache cache(params(CacheMode::UCache, "threshold=30,start=0,end=1,reset=0"),
                    DenoiserArch::UNet, Parameterization::discrete(), SamplerKind::EulerA);
    EXPECT_EQ(count(drive(cache, sd1_sigmas(8)).skipped), 5);
    EXPECT_EQ(count(drive(cache, sd1_sigmas(8)).skipped), 5);
    EXPECT_EQ(cache.skipped(), 5);
}

TEST(CacheOptions, KeysMeanTheirModesParameters) {
    CacheParams u =
        params(CacheMode::UCache, "threshold=1.5,start=0.1,end=0.9,decay=0.5,relative=0,reset=0");
    EXPECT_FLOAT_EQ(u.reuse_threshold, 1.5f);
    EXPECT_FLOAT_EQ(u.residual_diff_threshold, 0.08f);
    EXPECT_FLOAT_EQ(u.start, 0.1f);
    EXPECT_FLOAT_EQ(u.end, 0.9f);
    EXPECT_FLOAT_EQ(u.decay, 0.5f);
    EXPECT_FALSE(u.relative);
    EXPECT_FALSE(u.reset);
    CacheParams d = params(CacheMode::CacheDit, "threshold=0.2,Fn=4,bn=2,warmup=3");
    EXPECT_FLOAT_EQ(d.residual_diff_threshold, 0.2f);
    EXPECT_TRUE(std::isinf(d.reuse_threshold));
    EXPECT_EQ(d.fn, 4);
    EXPECT_EQ(d.bn, 2);
    EXPECT_EQ(d.max_warmup_steps, 3);
    CacheParams s =
        params(CacheMode::Spectrum, "w=0.5,m=4,lam=2,window=3,flex=0.25,warmup=1,stop=0.8");
    EXPECT_FLOAT_EQ(s.spectrum_w, 0.5f);
    EXPECT_EQ(s.spectrum_m, 4);
    EXPECT_FLOAT_EQ(s.spectrum_lam, 2.0f);
    EXPECT_EQ(s.spectrum_window, 3);
    EXPECT_FLOAT_EQ(s.spectrum_flex, 0.25f);
    EXPECT_EQ(s.spectrum_warmup, 1);
    EXPECT_EQ(s.max_warmup_steps, 8);
    EXPECT_FLOAT_EQ(s.spectrum_stop, 0.8f);
    // The modes' default thresholds.
    EXPECT_FLOAT_EQ(params(CacheMode::EasyCache).effective_reuse_threshold(), 0.2f);
    EXPECT_FLOAT_EQ(params(CacheMode::UCache).effective_reuse_threshold(), 1.0f);
}

TEST(CacheOptions, OtherModesKeysAreAcceptedAndReportedUnused) {
    CacheParams p;
    p.mode = CacheMode::UCache;
    std::vector<std::string> unused;
    ASSERT_TRUE(apply_cache_options("threshold=2,w=0.3,Fn=4,warmup=2", p, &unused).ok());
    EXPECT_EQ(unused, (std::vector<std::string>{"w", "Fn", "warmup"}));
}

TEST(CacheOptions, BadOptionsAreClearErrors) {
    struct Bad {
        CacheMode mode;
        const char* text;
        const char* says;
    };
    const Bad bad[] = {
        {CacheMode::UCache, "thresh=1", "unknown key 'thresh'"},
        {CacheMode::UCache, "threshold", "'threshold' is not key=value"},
        {CacheMode::UCache, "threshold=abc", "threshold: 'abc' is not a number"},
        {CacheMode::UCache, "threshold=1x", "is not a number"},
        {CacheMode::CacheDit, "Fn=2.5", "Fn: '2.5' is not an integer"},
        {CacheMode::Spectrum, "window=", "window: '' is not an integer"},
    };
    for (const Bad& b : bad) {
        CacheParams p;
        p.mode = b.mode;
        const Status st = apply_cache_options(b.text, p);
        ASSERT_FALSE(st.ok()) << b.text;
        EXPECT_NE(st.message().find(b.says), std::string::npos) << st.message();
        EXPECT_NE(st.message().find("--cache-option"), std::string::npos) << st.message();
    }
    struct Range {
        CacheMode mode;
        const char* text;
        const char* says;
    };
    const Range ranges[] = {
        {CacheMode::UCache, "start=0.5,end=0.5", "0 <= start < end <= 1"},
        {CacheMode::EasyCache, "end=1.5", "0 <= start < end <= 1"},
        {CacheMode::UCache, "threshold=-1", "threshold must be >= 0"},
        {CacheMode::DbCache, "threshold=-0.1", "threshold must be >= 0"},
        {CacheMode::Spectrum, "window=0", "window must be >= 1"},
        {CacheMode::Spectrum, "m=-1", "m (Chebyshev degree)"},
        {CacheMode::Spectrum, "stop=2", "stop must be in [0, 1]"},
    };
    for (const Range& r : ranges) {
        CacheParams p;
        p.mode = r.mode;
        ASSERT_TRUE(apply_cache_options(r.text, p).ok()) << r.text;
        const Status st = check_cache_params(p);
        ASSERT_FALSE(st.ok()) << r.text;
        EXPECT_NE(st.message().find(r.says), std::string::npos) << st.message();
    }
    // The percent range only binds the modes that read it.
    CacheParams sp;
    sp.mode = CacheMode::Spectrum;
    ASSERT_TRUE(apply_cache_options("start=0.5,end=0.5", sp).ok());
    EXPECT_TRUE(check_cache_params(sp).ok());
}

TEST(CacheOptions, ModesAndScmMasks) {
    for (const std::string& name : cache_mode_names()) {
        auto m = parse_cache_mode(name);
        ASSERT_TRUE(m.ok()) << name;
        EXPECT_EQ(cache_mode_name(*m), name);
    }
    EXPECT_FALSE(parse_cache_mode("fastcache").ok());
    auto mask = parse_scm_mask("1,1,0, 1");
    ASSERT_TRUE(mask.ok());
    EXPECT_EQ(*mask, (std::vector<int>{1, 1, 0, 1}));
    auto bad = parse_scm_mask("1,2");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find("'2' is not 0 or 1"), std::string::npos);
    EXPECT_FALSE(parse_scm_mask("1,,0").ok());
}

}  // namespace
}  // namespace ggdiff::sampling
