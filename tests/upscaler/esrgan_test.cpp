// ESRGAN upscaler internals: the original-ESRGAN name map, architecture detection on both
// layouts (fixtures of ../shared/golden/sd1_extras), the clear refusals, the reference
// engine's tile layout, seamless blending (exact for per-pixel work), and the network run
// tiled against the same run untiled.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "io/name_map.h"
#include "io/tensor_index.h"
#include "models/upscaler/esrgan.h"
#include "models/upscaler/upscale_tiling.h"
#include "pipeline/upscale.h"
#include "sampling/rng.h"

namespace ggdiff {
namespace {

using models::AxisTiles;
using models::detect_esrgan;
using models::EsrganUpscaler;
using models::plan_tiles;
using models::run_upscale_tiles;

std::string fixture(const std::string& stem) {
    return std::string(GGDIFF_BINARY_DIR) + "/fixtures/" + stem + ".safetensors";
}

std::string map_old(const std::string& name) {
    std::string out;
    return old_esrgan_to_basicsr(name, &out) ? out : "(unmapped)";
}

TEST(EsrganNames, OriginalLayoutBecomesBasicSR) {
    EXPECT_EQ(map_old("model.0.weight"), "conv_first.weight");
    EXPECT_EQ(map_old("model.1.sub.0.RDB1.conv1.0.weight"), "body.0.rdb1.conv1.weight");
    EXPECT_EQ(map_old("model.1.sub.22.RDB3.conv5.0.bias"), "body.22.rdb3.conv5.bias");
    EXPECT_EQ(map_old("model.1.sub.23.weight"), "conv_body.weight");
    EXPECT_EQ(map_old("model.1.sub.23.bias"), "conv_body.bias");
    // x4: upsample, conv, lrelu, upsample, conv, lrelu, conv_hr, lrelu, conv_last.
    EXPECT_EQ(map_old("model.3.weight"), "conv_up1.weight");
    EXPECT_EQ(map_old("model.6.bias"), "conv_up2.bias");
    EXPECT_EQ(map_old("model.8.weight"), "conv_hr.weight");
    EXPECT_EQ(map_old("model.10.weight"), "conv_last.weight");
    // x2: conv_hr at 5, conv_last at 7; x1: conv_hr at 2, conv_last at 4.
    EXPECT_EQ(map_old("model.5.weight"), "conv_hr.weight");
    EXPECT_EQ(map_old("model.7.weight"), "conv_last.weight");
    EXPECT_EQ(map_old("model.2.weight"), "conv_hr.weight");
    EXPECT_EQ(map_old("model.4.bias"), "conv_last.bias");
    EXPECT_EQ(map_old("model.9.weight"), "(unmapped)");
    EXPECT_EQ(map_old("conv_first.weight"), "(unmapped)");

    EXPECT_TRUE(is_old_esrgan_layout({"model.0.weight", "model.1.sub.0.RDB1.conv1.0.weight"}));
    EXPECT_FALSE(is_old_esrgan_layout({"conv_first.weight", "body.0.rdb1.conv1.weight"}));
    // Only the upscaler role renames: the same names under another role stay as stored.
    const auto kept =
        map_tensor_names({"model.0.weight", "model.1.sub.0.RDB1.conv1.0.weight"}, "taesd.");
    ASSERT_EQ(kept.size(), 2u);
    EXPECT_EQ(kept[0].name, "taesd.model.0.weight");
    const auto renamed = map_tensor_names({"model.0.weight", "model.1.sub.0.RDB1.conv1.0.weight"},
                                          prefix_for_role("upscale-model"));
    ASSERT_EQ(renamed.size(), 2u);
    EXPECT_EQ(renamed[0].name, "upscaler.conv_first.weight");
    EXPECT_EQ(renamed[1].name, "upscaler.body.0.rdb1.conv1.weight");
}

TEST(EsrganDetect, BothLayoutsOfTheFixtures) {
    TensorIndex x2;
    ASSERT_TRUE(x2.add(fixture("sd1_extras_esrgan_x2"), "upscaler.").ok());
    auto c2 = detect_esrgan(x2);
    ASSERT_TRUE(c2.ok()) << c2.status().message();
    EXPECT_EQ(c2->scale, 2);
    EXPECT_EQ(c2->num_block, 1);
    EXPECT_EQ(c2->num_feat, 64);
    EXPECT_EQ(c2->num_grow, 32);

    TensorIndex x4;
    ASSERT_TRUE(x4.add(fixture("sd1_extras_esrgan_x4_old"), "upscaler.").ok());
    auto c4 = detect_esrgan(x4);
    ASSERT_TRUE(c4.ok()) << c4.status().message();
    EXPECT_EQ(c4->scale, 4);
    EXPECT_EQ(c4->num_block, 1);

    auto s = models::esrgan_file_scale(fixture("sd1_extras_esrgan_x4_old"));
    ASSERT_TRUE(s.ok()) << s.status().message();
    EXPECT_EQ(*s, 4);
}

TEST(EsrganDetect, RefusesWhatIsNoEsrgan) {
    // A diffusion checkpoint.
    auto sd = models::esrgan_file_scale(fixture("sd1_mc32"));
    ASSERT_FALSE(sd.ok());
    EXPECT_NE(sd.status().message().find("not an ESRGAN"), std::string::npos)
        << sd.status().message();
    // A PyTorch file that is no checkpoint is named as what it is.
    const std::string pth = std::string(GGDIFF_TEST_TMP) + "/not_a_model.pth";
    std::filesystem::create_directories(GGDIFF_TEST_TMP);
    { std::ofstream(pth) << "PK\x03\x04"; }
    auto bad = models::esrgan_file_scale(pth);
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find("zip archive"), std::string::npos)
        << bad.status().message();
    // A missing tensor is named.
    TensorIndex x2;
    ASSERT_TRUE(x2.add(fixture("sd1_extras_esrgan_x2"), "upscaler.").ok());
    auto other = detect_esrgan(x2, "other.");
    EXPECT_FALSE(other.ok());
}

// The reference engine's tile counts and overlaps (its sd_tiling_calc_tiles at 25 %, the
// upscaler's target).
TEST(UpscaleTiling, TileLayoutAsTheReference) {
    auto starts = [](const AxisTiles& a) {
        std::vector<int> out;
        for (const auto& t : a.tiles) out.push_back(t.start);
        return out;
    };
    auto p = plan_tiles(100, 128, 0.25f);
    EXPECT_EQ(p.tiles.size(), 1u);
    EXPECT_EQ(p.overlap, 0);
    EXPECT_EQ(p.tile, 100);
    p = plan_tiles(128, 128, 0.25f);
    EXPECT_EQ(p.tiles.size(), 1u);
    p = plan_tiles(200, 128, 0.25f);  // 2 tiles: overlap (256 - 200) / 128 of a tile
    EXPECT_EQ(p.tiles.size(), 2u);
    EXPECT_EQ(p.overlap, 56);
    EXPECT_EQ(starts(p), (std::vector<int>{0, 72}));
    p = plan_tiles(300, 128, 0.25f);  // 3 tiles: (384 - 300) / 256 of a tile
    EXPECT_EQ(p.tiles.size(), 3u);
    EXPECT_EQ(p.overlap, 42);
    EXPECT_EQ(starts(p), (std::vector<int>{0, 86, 172}));
    p = plan_tiles(512, 128, 0.25f);
    EXPECT_EQ(p.tiles.size(), 5u);
    EXPECT_EQ(p.overlap, 32);
    EXPECT_EQ(starts(p), (std::vector<int>{0, 96, 192, 288, 384}));
}

// A per-pixel "upscaler": every tile computes exactly the untiled values, so the blend must
// give the untiled image back (weights of overlapping tiles add up to 1).
Status pixel_x2(const HostTensor& in, HostTensor& out) {
    const int64_t w = in.dim(0), h = in.dim(1), c = in.dim(2);
    out = HostTensor({w * 2, h * 2, c, 1});
    for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t y = 0; y < h * 2; ++y)
            for (int64_t x = 0; x < w * 2; ++x)
                out.data[(ch * h * 2 + y) * w * 2 + x] =
                    std::sin(in.data[(ch * h + y / 2) * w + x / 2] * 3.0f) + 0.1f * (x % 2);
    return Status::Ok();
}

TEST(UpscaleTiling, BlendIsSeamlessForPerPixelWork) {
    for (auto [w, h, tile] : std::vector<std::tuple<int, int, int>>{
             {40, 24, 16}, {33, 70, 16}, {64, 64, 32}, {100, 37, 24}, {20, 20, 32}}) {
        SCOPED_TRACE(testing::Message() << w << "x" << h << " tile " << tile);
        HostTensor in({w, h, 3, 1});
        for (size_t i = 0; i < in.data.size(); ++i) in.data[i] = std::cos(0.37f * i);
        HostTensor whole, tiled;
        ASSERT_TRUE(pixel_x2(in, whole).ok());
        ASSERT_TRUE(run_upscale_tiles(in, tiled, 2, tile, pixel_x2).ok());
        ASSERT_EQ(tiled.ne, whole.ne);
        float worst = 0.0f;
        for (size_t i = 0; i < whole.data.size(); ++i)
            worst = std::max(worst, std::fabs(whole.data[i] - tiled.data[i]));
        EXPECT_LT(worst, 1e-5f);
    }
}

TEST(UpscaleTiling, Errors) {
    HostTensor in({8, 8, 3, 1});
    HostTensor out;
    auto wrong = [](const HostTensor& a, HostTensor& b) {
        b = HostTensor({a.dim(0), a.dim(1), 3, 1});  // not scaled
        return Status::Ok();
    };
    EXPECT_FALSE(run_upscale_tiles(in, out, 2, 4, wrong).ok());
    auto boom = [](const HostTensor&, HostTensor&) { return Status::Error("boom"); };
    auto st = run_upscale_tiles(in, out, 2, 4, boom);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.message().find("boom"), std::string::npos) << st.message();
}

HostTensor random_image(int w, int h, uint64_t seed) {
    HostTensor t({w, h, 3, 1});
    auto rng = sampling::make_rng(sampling::RngKind::Cpu, seed);
    const std::vector<float> n = rng->randn(t.data.size());
    for (size_t i = 0; i < n.size(); ++i) {
        // A smooth pattern plus a little noise, in [0, 1].
        const float x = static_cast<float>(i % w), y = static_cast<float>((i / w) % h);
        t.data[i] =
            std::clamp(0.5f + 0.3f * std::sin(x * 0.2f + y * 0.1f) + 0.05f * n[i], 0.f, 1.f);
    }
    return t;
}

// The real network, tiled (tiles of 32 with the reference's overlap) against untiled: the
// same away from the seams; at the seams only the receptive field beyond a tile differs, so
// the image stays close (and no tile is missing or doubled: the mean would move).
TEST(EsrganUpscaler, TiledCloseToUntiledAndShapes) {
    auto up = EsrganUpscaler::load(fixture("sd1_extras_esrgan_x2"), ModuleDevices{}, 2);
    ASSERT_TRUE(up.ok()) << up.status().message();
    EXPECT_EQ((*up)->scale(), 2);
    EXPECT_EQ((*up)->name(), "sd1_extras_esrgan_x2");
    const HostTensor in = random_image(72, 48, 7);
    auto whole = (*up)->upscale(in, 0);
    ASSERT_TRUE(whole.ok()) << whole.status().message();
    EXPECT_EQ(whole->ne, (std::vector<int64_t>{144, 96, 3, 1}));
    auto tiled = (*up)->upscale(in, 32);
    ASSERT_TRUE(tiled.ok()) << tiled.status().message();
    ASSERT_EQ(tiled->ne, whole->ne);
    double sum = 0, mean_w = 0, mean_t = 0;
    float worst = 0;
    for (size_t i = 0; i < whole->data.size(); ++i) {
        const float d = std::fabs(whole->data[i] - tiled->data[i]);
        sum += d;
        worst = std::max(worst, d);
        mean_w += whole->data[i];
        mean_t += tiled->data[i];
    }
    const double n = static_cast<double>(whole->data.size());
    std::printf("[ esrgan   ] tiled (32) vs untiled 72x48 x2: mean abs %.5f max %.4f (0-1 scale)\n",
                sum / n, worst);
    EXPECT_LT(sum / n, 0.02);
    EXPECT_NEAR(mean_w / n, mean_t / n, 0.005);
    // The same input untiled twice is deterministic.
    auto again = (*up)->upscale(in, 0);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->data, whole->data);
}

// A1111's extras fields go on the parameters line; text without one gets them on a line of
// their own; names that need it are quoted.
TEST(UpscaleParameters, AddsA1111ExtrasFields) {
    EXPECT_EQ(parameters_with_upscale("a cat\nSteps: 4, Sampler: Euler, Seed: 1\n", 4,
                                      "RealESRGAN_x4plus"),
              "a cat\nSteps: 4, Sampler: Euler, Seed: 1, Postprocess upscale by: 4, Postprocess "
              "upscaler: RealESRGAN_x4plus");
    EXPECT_EQ(parameters_with_upscale("", 2, "m"),
              "Postprocess upscale by: 2, Postprocess upscaler: m");
    EXPECT_EQ(parameters_with_upscale("just a prompt", 16, "a,b"),
              "just a prompt\nPostprocess upscale by: 16, Postprocess upscaler: \"a,b\"");
}

}  // namespace
}  // namespace ggdiff
