#include <gtest/gtest.h>

#include "sampling/guidance.h"
#include "sampling/parameterization.h"

namespace ggdiff::sampling {
namespace {

TEST(Guidance, Cfg) {
    std::vector<float> out;
    apply_cfg({1.0f, 2.0f}, {0.5f, -1.0f}, 7.0f, out);
    EXPECT_EQ(out, (std::vector<float>{0.5f + 7.0f * 0.5f, -1.0f + 7.0f * 3.0f}));
    apply_cfg({1.0f, 2.0f}, {0.5f, -1.0f}, 1.0f, out);  // scale 1 is the conditional output
    EXPECT_EQ(out, (std::vector<float>{1.0f, 2.0f}));
    apply_cfg({1.0f}, {0.5f}, 0.0f, out);  // scale 0 is the unconditional output
    EXPECT_EQ(out, (std::vector<float>{0.5f}));
}

TEST(Guidance, ImageCfgReducesToCfgAtImageScaleOne) {
    const std::vector<float> cond = {1.0f, -2.0f}, uncond = {0.25f, 0.5f},
                             img_uncond = {3.0f, 4.0f};
    std::vector<float> three, two;
    apply_img_cfg(cond, uncond, img_uncond, 5.0f, 1.0f, three);
    apply_cfg(cond, uncond, 5.0f, two);
    for (size_t i = 0; i < 2; ++i) EXPECT_FLOAT_EQ(three[i], two[i]);
    apply_img_cfg(cond, uncond, img_uncond, 5.0f, 1.5f, three);
    EXPECT_FLOAT_EQ(three[0], 3.0f + 1.5f * (0.25f - 3.0f) + 5.0f * (1.0f - 0.25f));
}

TEST(Guidance, SkipLayerWindow) {
    SlgParams slg;
    EXPECT_FALSE(slg.active(3, 21));  // scale 0: off
    slg.scale = 2.5f;
    // 21 sigmas: start int(0.01*21) = 0, end int(0.2*21) = 4: counted steps 1..3.
    EXPECT_TRUE(slg.active(0, 21));
    EXPECT_TRUE(slg.active(2, 21));
    EXPECT_FALSE(slg.active(3, 21));
    slg.layers.clear();
    EXPECT_FALSE(slg.active(0, 21));
    std::vector<float> out = {1.0f};
    apply_slg({2.0f}, {1.5f}, 2.5f, out);
    EXPECT_FLOAT_EQ(out[0], 1.0f + 2.5f * 0.5f);
    GuidanceParams g;
    EXPECT_EQ(g.effective_img_cfg(), g.txt_cfg);
    g.img_cfg = 1.5f;
    EXPECT_EQ(g.effective_img_cfg(), 1.5f);
}

// The window as sd-cli counts it: 1-based step s of n steps (n + 1 sigmas) is guided when
// int(start * (n + 1)) < s < int(end * (n + 1)); a predictor evaluation never is.
TEST(Guidance, SkipLayerWindowFollowsSdCli) {
    SlgParams slg;
    slg.scale = 2.5f;
    slg.layers = {0, 1};
    slg.start = 0.1f;
    slg.end = 0.7f;
    // 4 steps, 5 sigmas: int(0.5) = 0 < s < int(3.5) = 3: steps 1 and 2 (0-based 0, 1).
    std::vector<bool> on;
    for (int i = 0; i < 4; ++i) on.push_back(slg.active(i, 5));
    EXPECT_EQ(on, (std::vector<bool>{true, true, false, false}));
    EXPECT_TRUE(slg.applies(DenoiseStep{1, false}, 5));
    EXPECT_FALSE(slg.applies(DenoiseStep{1, true}, 5));  // the predictor of a heun step
    EXPECT_FALSE(slg.applies(DenoiseStep{2, false}, 5));
    // Defaults (0.01 .. 0.2) over 20 steps: int(0.21) = 0 < s < int(4.2) = 4: steps 1..3.
    SlgParams d;
    d.scale = 1.0f;
    int count = 0, first = -1;
    for (int i = 0; i < 20; ++i) {
        if (d.active(i, 21)) {
            if (first < 0) first = i;
            ++count;
        }
    }
    EXPECT_EQ(first, 0);
    EXPECT_EQ(count, 3);
    // An empty window (start == end) guides no step.
    slg.start = slg.end = 0.5f;
    for (int i = 0; i < 4; ++i) EXPECT_FALSE(slg.active(i, 5)) << i;
    // start 0.2 over 4 steps: int(1.0) = 1, so step 1 is excluded.
    slg.start = 0.2f;
    slg.end = 1.0f;
    on.clear();
    for (int i = 0; i < 4; ++i) on.push_back(slg.active(i, 5));
    EXPECT_EQ(on, (std::vector<bool>{false, true, true, true}));
}

TEST(Guidance, ApplyScalingsGivesTheDenoisedEstimate) {
    const auto m = Parameterization::discrete(Prediction::Eps);
    const float sigma = 2.0f;
    const std::vector<float> x0 = {0.5f, -1.0f}, eps = {1.0f, 0.25f};
    std::vector<float> x = {x0[0] + sigma * eps[0], x0[1] + sigma * eps[1]};
    std::vector<float> den;
    apply_scalings(eps, x, m.scalings(sigma), den);
    EXPECT_FLOAT_EQ(den[0], x0[0]);
    EXPECT_FLOAT_EQ(den[1], x0[1]);
}

}  // namespace
}  // namespace ggdiff::sampling
