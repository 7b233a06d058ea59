// Skip-layer guidance in the generate path, on a fake family whose denoiser reports what it
// was asked: plan_request refuses what the family cannot honour, and guided_denoiser runs
// the extra pass (positive prompt only, the blocks to skip set) only on the evaluations of
// the window, adding scale * (cond - skipped) to the guided raw output, with and without CFG.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "../support/fake_parts.h"
#include "pipeline/family.h"
#include "pipeline/generate_plan.h"
#include "pipeline/phase_denoise.h"

namespace ggdiff {
namespace {

using fake_parts::FakeText;
using fake_parts::FakeVae;

// Per call: how many items, which conditionings, which blocks skipped.
struct Call {
    std::vector<const Conditioning*> cond;
    std::vector<int> skipped;
};

// Output per item: x * 0.5 + a value of its conditioning (1 prompt, -2 negative prompt),
// minus 0.25 per skipped block.
class FakeDenoiser : public Denoiser {
  public:
    explicit FakeDenoiser(const Conditioning* negative) : negative_(negative) {}
    Result<HostTensor> run(const DenoiseBatch& b) override {
        Call call;
        call.cond = b.cond;
        if (b.skip_layers) call.skipped = *b.skip_layers;
        calls.push_back(call);
        HostTensor out(b.x.ne);
        const size_t n = b.x.data.size() / b.cond.size();
        for (size_t item = 0; item < b.cond.size(); ++item) {
            const float c = b.cond[item] == negative_ ? -2.0f : 1.0f;
            for (size_t i = 0; i < n; ++i) {
                out.data[item * n + i] = 0.5f * b.x.data[item * n + i] + c -
                                         0.25f * static_cast<float>(call.skipped.size());
            }
        }
        return out;
    }
    void end_phase() override {}
    std::vector<Call> calls;

  private:
    const Conditioning* negative_;
};

class SkipLayerGuidanceTest : public ::testing::Test {
  protected:
    void SetUp() override {
        family_.name = "Fake DiT";
        family_.param = sampling::Parameterization::flow(3.0f);
        family_.defaults.cfg_scale = 1.0f;
        family_.latent_channels = 2;
        family_.skips_layers = true;
        family_.skip_layer_count = 4;
        family_.text = std::make_unique<FakeText>();
        family_.vae = std::make_unique<FakeVae>();
        auto d = std::make_unique<FakeDenoiser>(&text_.uncond);
        denoiser_ = d.get();
        family_.denoiser = std::move(d);
        // Same shapes: the prompt and the negative prompt share one batched call.
        text_.cond.context = HostTensor({4, 2, 1});
        text_.uncond.context = HostTensor({4, 2, 1});
        options_.width = options_.height = 16;
        options_.steps = 4;
        options_.slg.scale = 2.5f;
        options_.slg.layers = {0, 1};
        options_.slg.start = 0.1f;
        options_.slg.end = 0.7f;
    }

    GeneratePlan plan() {
        auto p = plan_request(options_, family_);
        EXPECT_TRUE(p.ok()) << p.status().message();
        return p.ok() ? *p : GeneratePlan{};
    }

    std::string plan_error() {
        auto p = plan_request(options_, family_);
        return p.ok() ? "" : p.status().message();
    }

    // D(x, sigmas[step]) of `p` at evaluation `at`, and the calls it made.
    std::vector<float> evaluate(const GeneratePlan& p, sampling::DenoiseStep at) {
        inputs_.init.sigmas = p.sigmas;
        const DenoiseContext c{family_, p, options_, text_, inputs_};
        const sampling::DenoiseFn fn = guided_denoiser(c);
        denoiser_->calls.clear();
        std::vector<float> x(p.latent_numel());
        for (size_t i = 0; i < x.size(); ++i) x[i] = 0.1f * static_cast<float>(i);
        auto r = fn(x, p.sigmas[static_cast<size_t>(at.index)], at, false);
        EXPECT_TRUE(r.ok()) << r.status().message();
        return r.ok() ? r->denoised : std::vector<float>{};
    }

    Family family_;
    FakeDenoiser* denoiser_ = nullptr;
    TextConditions text_;
    DenoiseInputs inputs_;
    GenerateOptions options_;
};

TEST_F(SkipLayerGuidanceTest, ThePlanRefusesWhatTheFamilyCannotDo) {
    EXPECT_EQ(plan_error(), "");
    options_.slg.layers = {0, 4};
    EXPECT_EQ(plan_error(), "--skip-layers: Fake DiT has no block 4 (its blocks are 0..3)");
    options_.slg.layers = {};
    EXPECT_NE(plan_error().find("at least one block"), std::string::npos) << plan_error();
    options_.slg.layers = {1};
    options_.slg.start = 0.8f;
    EXPECT_EQ(plan_error(), "--skip-layer-start 0.8 is after --skip-layer-end 0.7");
    options_.slg.start = 0.1f;
    family_.skips_layers = false;
    EXPECT_EQ(plan_error(),
              "--slg-scale: skip-layer guidance is not supported for Fake DiT (it works with "
              "FLUX and SD3)");
    options_.slg.scale = 0.0f;  // off: nothing asked of the family
    options_.slg.layers = {99};
    EXPECT_EQ(plan_error(), "");
}

// CFG off (cfg 1): the guided output is the prompt's; on a step of the window the extra pass
// (prompt only, blocks 0 and 1 skipped: output lower by 0.5) adds 2.5 * 0.5 to the raw output.
TEST_F(SkipLayerGuidanceTest, ExtraPassOnlyInsideTheWindowWithoutCfg) {
    const GeneratePlan p = plan();
    ASSERT_FALSE(p.use_uncond);
    ASSERT_EQ(p.sigmas.size(), 5u);  // 4 steps: 1-based steps 1 and 2 are guided
    options_.slg.scale = 0.0f;
    const GeneratePlan off = plan();
    for (int step = 0; step < 4; ++step) {
        for (bool predictor : {false, true}) {
            const sampling::DenoiseStep at{step, predictor};
            const std::vector<float> plain = evaluate(off, at);
            ASSERT_EQ(denoiser_->calls.size(), 1u);
            const std::vector<float> guided = evaluate(p, at);
            const bool active = step < 2 && !predictor;
            SCOPED_TRACE("step " + std::to_string(step) + (predictor ? " predictor" : ""));
            if (!active) {
                ASSERT_EQ(denoiser_->calls.size(), 1u);
                EXPECT_EQ(guided, plain);
                continue;
            }
            ASSERT_EQ(denoiser_->calls.size(), 2u);
            EXPECT_TRUE(denoiser_->calls[0].skipped.empty());
            ASSERT_EQ(denoiser_->calls[1].cond.size(), 1u);
            EXPECT_EQ(denoiser_->calls[1].cond[0], &text_.cond);
            EXPECT_EQ(denoiser_->calls[1].skipped, (std::vector<int>{0, 1}));
            const float c_out = p.param.model_step(p.sigmas[static_cast<size_t>(step)]).s.c_out;
            ASSERT_EQ(guided.size(), plain.size());
            for (size_t i = 0; i < plain.size(); ++i)
                EXPECT_NEAR(guided[i] - plain[i], c_out * 2.5f * 0.5f, 1e-5f) << i;
        }
    }
}

// CFG on, prompt and negative prompt batched: the extra pass still runs the prompt alone and
// its push comes on top of CFG's.
TEST_F(SkipLayerGuidanceTest, ExtraPassAfterCfg) {
    options_.cfg_scale = 3.0f;
    const GeneratePlan p = plan();
    ASSERT_TRUE(p.use_uncond);
    options_.slg.scale = 0.0f;
    const GeneratePlan off = plan();
    const sampling::DenoiseStep at{1, false};
    const std::vector<float> plain = evaluate(off, at);
    ASSERT_EQ(denoiser_->calls.size(), 1u);
    EXPECT_EQ(denoiser_->calls[0].cond.size(), 2u);
    const std::vector<float> guided = evaluate(p, at);
    ASSERT_EQ(denoiser_->calls.size(), 2u);
    EXPECT_EQ(denoiser_->calls[1].cond, (std::vector<const Conditioning*>{&text_.cond}));
    EXPECT_EQ(denoiser_->calls[1].skipped, (std::vector<int>{0, 1}));
    const float c_out = p.param.model_step(p.sigmas[1]).s.c_out;
    for (size_t i = 0; i < plain.size(); ++i)
        EXPECT_NEAR(guided[i] - plain[i], c_out * 2.5f * 0.5f, 1e-5f) << i;
    // CFG itself is as before: uncond + 3 (cond - uncond) of the raw outputs.
    const float c_skip = p.param.model_step(p.sigmas[1]).s.c_skip;
    const float x0 = 0.0f;
    EXPECT_NEAR(plain[0], c_skip * x0 + c_out * (0.5f * x0 + (-2.0f + 3.0f * 3.0f)), 1e-5f);
}

}  // namespace
}  // namespace ggdiff
