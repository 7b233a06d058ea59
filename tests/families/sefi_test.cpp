// SeFi-Image without a model run: a bare SeFi DiT file (script/convert_sefi.py's names) is
// filed under the diffusion model (the family walk and the golden set detect it), and its dual-time
// sampling (the semantic and texture schedules, each evaluation's timesteps, the split Euler
// step) is checked value by value against stable-diffusion.cpp's arithmetic.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <vector>

#include "families/registry.h"
#include "families/sefi/schedule.h"
#include "io/name_map.h"
#include "pipeline/latent_rgb.h"

namespace ggdiff {
namespace {

TEST(SefiNames, BareFileIsFiledUnderTheDiffusionModel) {
    const std::vector<std::string> names = {"dual_time_embed.semantic_embedder.linear_1.weight",
                                            "double_stream_modulation_img.lin.weight",
                                            "img_in.weight"};
    std::map<std::string, std::string> m;
    for (const NameMapping& x : map_tensor_names(names, "", nullptr, model_layouts()))
        m[names[x.source]] = x.name;
    EXPECT_EQ(m.at("dual_time_embed.semantic_embedder.linear_1.weight"),
              "model.diffusion_model.dual_time_embed.semantic_embedder.linear_1.weight");
}

TEST(SefiSchedule, FourStepsAsTheReference) {
    const SefiSchedule s = sefi_schedule(4);
    // v = i/4 * 1.1: semantic index int(min(v, 1) * 999), texture int(clamp(v - 0.1) * 999).
    const std::vector<float> sem_t = {1000, 726, 451, 176, 1};
    const std::vector<float> tex_t = {1000, 826, 551, 276, 1};
    ASSERT_EQ(s.steps(), 4);
    for (int i = 0; i <= 4; ++i) {
        EXPECT_EQ(s.semantic_timesteps[i], sem_t[i]) << i;
        EXPECT_EQ(s.texture_timesteps[i], tex_t[i]) << i;
        EXPECT_FLOAT_EQ(s.semantic_sigmas[i], sem_t[i] / 1000.0f) << i;
        EXPECT_FLOAT_EQ(s.texture_sigmas[i], tex_t[i] / 1000.0f) << i;
    }
}

TEST(SefiSchedule, AlphaHoldsTheTextureWhileTheSemanticsMove) {
    // alpha 0.3 (the reference's docs for Base / RL): step 1's texture level is still 1.
    const SefiSchedule s = sefi_schedule(4, 0.3f);
    EXPECT_EQ(s.texture_timesteps[0], 1000);
    EXPECT_EQ(s.texture_timesteps[1], 1000);
    EXPECT_LT(s.semantic_timesteps[1], 1000);
}

TEST(SefiEuler, MovesEachChannelGroupOnItsOwnSchedule) {
    const SefiSchedule s = sefi_schedule(4, 0.3f);
    const int64_t plane = 2;
    std::vector<float> x(plane * 144, 0.5f);
    std::vector<std::pair<float, float>> seen;
    // A velocity of 1 everywhere: denoised = x - sigma.
    sampling::DenoiseFn denoise = [](const std::vector<float>& xin, float sigma,
                                     sampling::DenoiseStep, bool) {
        sampling::DenoiseResult r;
        for (float v : xin) r.denoised.push_back(v - sigma);
        return Result<sampling::DenoiseResult>(r);
    };
    int last = 0;
    ASSERT_TRUE(sefi_euler(
                    denoise, [&](float a, float b) { seen.emplace_back(a, b); }, x, plane, s,
                    [&](int step, int) {
                        last = step;
                        if (step == 1) {
                            // Texture sigma 1 -> 1: only the semantic channels moved.
                            EXPECT_FLOAT_EQ(x[plane * 16], 0.5f);
                            EXPECT_LT(x[0], 0.5f);
                        }
                        return true;
                    })
                    .ok());
    EXPECT_EQ(last, 4);
    ASSERT_EQ(seen.size(), 4u);
    for (int i = 0; i < 4; ++i) {
        EXPECT_EQ(seen[i].first, s.semantic_timesteps[i]);
        EXPECT_EQ(seen[i].second, s.texture_timesteps[i]);
    }
    // Each group travelled its sigma range once: 1 -> 0.001.
    EXPECT_NEAR(x[0], 0.5f - 0.999f, 1e-5f);
    EXPECT_NEAR(x[plane * 143], 0.5f - 0.999f, 1e-5f);
    std::vector<float> wrong(10);
    EXPECT_FALSE(sefi_euler(
                     denoise, [](float, float) {}, wrong, plane, s)
                     .ok());
}

// --preview proj: the texture channels through FLUX.2's projection, the semantic ones unread.
TEST(SefiPreview, ProjectsTheTextureChannelsAsFlux2) {
    HostTensor sefi({3, 2, 144, 1}), flux2({3, 2, 128, 1});
    for (size_t i = 0; i < flux2.data.size(); ++i) {
        flux2.data[i] = static_cast<float>((i * 37) % 11) / 5.0f - 1.0f;
    }
    for (size_t i = 0; i < 6 * 16; ++i) sefi.data[i] = 0.9f;
    std::copy(flux2.data.begin(), flux2.data.end(), sefi.data.begin() + 6 * 16);
    auto a = project_latent_rgb(sefi, LatentRgb::SefiImage);
    auto b = project_latent_rgb(flux2, LatentRgb::Flux2);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->width, 6);
    EXPECT_EQ(a->pixels, b->pixels);
    EXPECT_FALSE(project_latent_rgb(flux2, LatentRgb::SefiImage).ok());
}

}  // namespace
}  // namespace ggdiff
