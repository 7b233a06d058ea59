// The hires fix's plan (pipeline/phase_hires.h) on a fake family: the target size (scale,
// one side, both, rounded up to the denoiser's multiple), the cut schedule (A1111's
// steps / strength rule, as in ../shared/golden/sd1_extras notes), the upscaler names and
// model lookup, and the infotext keys; plus the latent upscale itself and the mask resize.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "../support/fake_parts.h"
#include "pipeline/family.h"
#include "pipeline/generate_plan.h"
#include "pipeline/phase_hires.h"
#include "sampling/schedules.h"

namespace ggdiff {
namespace {

namespace fs = std::filesystem;

using fake_parts::FakeText;
using fake_parts::FakeVae;

class HiresPlanTest : public ::testing::Test {
  protected:
    void SetUp() override {
        family_.name = "Fake UNet";
        family_.arch = sampling::DenoiserArch::UNet;
        family_.text = std::make_unique<FakeText>();
        family_.vae = std::make_unique<FakeVae>(true);
        o_.width = 64;
        o_.height = 64;
        o_.steps = 4;
        o_.sampler = sampling::SamplerKind::Euler;
        o_.hires.enabled = true;
    }
    Result<std::optional<HiresPlan>> plan(const std::string& dir = "") {
        auto first = plan_request(o_, family_);
        if (!first.ok()) return first.status();
        first_ = *first;
        return plan_hires(o_, family_, first_, dir);
    }
    Family family_;
    GenerateOptions o_;
    GeneratePlan first_;
};

TEST_F(HiresPlanTest, OffWithoutTheFlagOrWithNone) {
    o_.hires.enabled = false;
    auto p = plan();
    ASSERT_TRUE(p.ok()) << p.status().message();
    EXPECT_FALSE(p->has_value());
    o_.hires.enabled = true;
    o_.hires.upscaler = "None";
    p = plan();
    ASSERT_TRUE(p.ok());
    EXPECT_FALSE(p->has_value());
}

TEST_F(HiresPlanTest, TargetFromScaleSideOrBothRoundedUpToTheUNetMultiple) {
    auto p = plan();
    ASSERT_TRUE(p.ok() && p->has_value()) << p.status().message();
    EXPECT_EQ((*p)->plan.width, 128);
    EXPECT_EQ((*p)->plan.height, 128);
    EXPECT_EQ((*p)->plan.latent_w, 16);
    EXPECT_EQ((*p)->kind, HiresPlan::Kind::Latent);
    EXPECT_EQ((*p)->filter, ResampleFilter::Bilinear);

    o_.hires.scale = 1.5f;  // 96 -> 128 (a multiple of 8 x 8)
    p = plan();
    ASSERT_TRUE(p.ok() && p->has_value());
    EXPECT_EQ((*p)->plan.width, 128);

    o_.hires.width = 192;  // one side: square
    p = plan();
    ASSERT_TRUE(p.ok() && p->has_value());
    EXPECT_EQ((*p)->plan.width, 192);
    EXPECT_EQ((*p)->plan.height, 192);

    o_.hires.height = 64;
    p = plan();
    ASSERT_TRUE(p.ok() && p->has_value());
    EXPECT_EQ((*p)->plan.width, 192);
    EXPECT_EQ((*p)->plan.height, 64);

    // A DiT-like family rounds to the VAE's factor only.
    family_.arch = sampling::DenoiserArch::DiT;
    o_.hires.width = 0;
    o_.hires.height = 0;
    o_.hires.scale = 1.5f;
    p = plan();
    ASSERT_TRUE(p.ok() && p->has_value());
    EXPECT_EQ((*p)->plan.width, 96);
}

TEST_F(HiresPlanTest, ScheduleIsStepsOverStrengthCutToTheLastSteps) {
    o_.hires.steps = 3;
    o_.hires.denoising_strength = 0.5f;
    auto p = plan();
    ASSERT_TRUE(p.ok() && p->has_value()) << p.status().message();
    // 3 / 0.5 = 6 scheduler steps, t_enc = 3: the last 4 steps (5 sigmas).
    GeneratePlan scratch = first_;
    auto full = schedule_sigmas(o_, family_, scratch, 6, 128, 128);
    ASSERT_TRUE(full.ok());
    ASSERT_EQ((*p)->plan.sigmas.size(), 5u);
    EXPECT_EQ((*p)->plan.sigmas, std::vector<float>(full->begin() + 2, full->end()));
    EXPECT_EQ((*p)->steps, 3);

    o_.hires.steps = 2;  // 4 scheduler steps, t_enc 2: 3 steps
    p = plan();
    ASSERT_TRUE(p.ok() && p->has_value());
    EXPECT_EQ((*p)->plan.sigmas.size(), 4u);

    o_.hires.steps = 0;  // --steps (4) at the default 0.7: 5 steps, t_enc 3
    o_.hires.denoising_strength = 0.7f;
    p = plan();
    ASSERT_TRUE(p.ok() && p->has_value());
    EXPECT_EQ((*p)->plan.sigmas.size(), 5u);

    o_.hires.sigmas = {3.0f, 1.0f, 0.0f};  // explicit sigmas replace it all
    p = plan();
    ASSERT_TRUE(p.ok() && p->has_value());
    EXPECT_EQ((*p)->plan.sigmas, o_.hires.sigmas);
}

TEST_F(HiresPlanTest, UpscalerNamesAndModels) {
    for (const std::string& name : hires_upscaler_names()) {
        o_.hires.upscaler = name;
        auto p = plan();
        ASSERT_TRUE(p.ok() && p->has_value()) << name << ": " << p.status().message();
        EXPECT_NE((*p)->kind, HiresPlan::Kind::Model) << name;
    }
    o_.hires.upscaler = "Latent (bicubic antialiased)";
    auto p = plan();
    ASSERT_TRUE(p.ok() && p->has_value());
    EXPECT_EQ((*p)->filter, ResampleFilter::Bicubic);
    EXPECT_TRUE((*p)->antialias);
    o_.hires.upscaler = "Lanczos";
    p = plan();
    ASSERT_TRUE(p.ok() && p->has_value());
    EXPECT_EQ((*p)->kind, HiresPlan::Kind::Image);

    // A model name: needs the folder, and the file in it.
    o_.hires.upscaler = "4x_fake";
    p = plan();
    ASSERT_FALSE(p.ok());
    EXPECT_NE(p.status().message().find("--hires-upscalers-dir"), std::string::npos);
    const fs::path dir = fs::temp_directory_path() / "ggdiff_hires_plan_test";
    fs::create_directories(dir);
    p = plan(dir.string());
    ASSERT_FALSE(p.ok());
    EXPECT_NE(p.status().message().find("no 4x_fake.gguf"), std::string::npos)
        << p.status().message();
    std::ofstream(dir / "4x_fake.safetensors") << "x";
    p = plan(dir.string());
    ASSERT_TRUE(p.ok() && p->has_value()) << p.status().message();
    EXPECT_EQ((*p)->kind, HiresPlan::Kind::Model);
    EXPECT_EQ((*p)->model_path, (dir / "4x_fake.safetensors").string());
    o_.hires.upscaler = "4x_fake.safetensors";  // a name, not a file
    EXPECT_FALSE(plan(dir.string()).ok());
    o_.hires.upscaler = "../4x_fake";
    EXPECT_FALSE(plan(dir.string()).ok());
    fs::remove_all(dir);

    // Image upscalers re-encode: a decoder-only VAE takes latent upscalers only.
    family_.vae = std::make_unique<FakeVae>(false);
    o_.hires.upscaler = "Nearest";
    EXPECT_FALSE(plan().ok());
    o_.hires.upscaler = "Latent (nearest)";
    EXPECT_TRUE(plan().ok());
}

TEST_F(HiresPlanTest, InfotextAsA1111WritesIt) {
    o_.hires.steps = 3;
    auto p = plan();
    ASSERT_TRUE(p.ok() && p->has_value());
    auto kv = hires_infotext(o_, **p);
    ASSERT_EQ(kv.size(), 3u);
    EXPECT_EQ(kv[0], (std::pair<std::string, std::string>{"Hires upscale", "2"}));
    EXPECT_EQ(kv[1], (std::pair<std::string, std::string>{"Hires steps", "3"}));
    EXPECT_EQ(kv[2], (std::pair<std::string, std::string>{"Hires upscaler", "Latent"}));
    o_.hires.steps = 0;
    o_.hires.width = 256;
    p = plan();
    ASSERT_TRUE(p.ok() && p->has_value());
    kv = hires_infotext(o_, **p);
    ASSERT_EQ(kv.size(), 2u);
    EXPECT_EQ(kv[0], (std::pair<std::string, std::string>{"Hires resize", "256x256"}));
}

TEST_F(HiresPlanTest, LatentUpscaleAndMaskResize) {
    auto p = plan();
    ASSERT_TRUE(p.ok() && p->has_value());
    const HiresPlan& hp = **p;
    std::vector<float> latent(first_.latent_numel());
    for (size_t i = 0; i < latent.size(); ++i) latent[i] = static_cast<float>(i % 7);
    auto rng = sampling::make_rng(sampling::RngKind::Cuda, 1);
    auto up = hires_upscale(family_, first_, hp, latent, *rng, TilingOptions{}, false, nullptr);
    ASSERT_TRUE(up.ok()) << up.status().message();
    EXPECT_EQ(up->size(), hp.plan.latent_numel());
    EXPECT_EQ(*up, resample_planes(latent, first_.latent_w, first_.latent_h, first_.latent_c,
                                   hp.plan.latent_w, hp.plan.latent_h, ResampleFilter::Bilinear));

    std::vector<float> keep(first_.latent_plane(), 0.0f);
    keep[0] = 1.0f;  // top-left latent pixel
    const auto k = hires_keep(keep, first_, hp);
    ASSERT_EQ(k.size(), hp.plan.latent_plane());
    EXPECT_EQ(k[0], 1.0f);
    EXPECT_EQ(k[1], 1.0f);
    EXPECT_EQ(k[static_cast<size_t>(hp.plan.latent_w)], 1.0f);
    EXPECT_EQ(k[2], 0.0f);
    EXPECT_TRUE(hires_keep({}, first_, hp).empty());
}

}  // namespace
}  // namespace ggdiff
