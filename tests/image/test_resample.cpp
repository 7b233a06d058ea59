// resample_planes against values worked out by hand from torch.nn.functional.interpolate's
// definitions (align_corners=False): sample centres, clamped edges, the nearest rules, the
// normalised antialias and Lanczos weights.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "image/resample.h"

namespace ggdiff {
namespace {

std::vector<float> row(const std::vector<float>& in, int64_t out, ResampleFilter f,
                       bool antialias = false) {
    return resample_planes(in, static_cast<int64_t>(in.size()), 1, 1, out, 1, f, antialias);
}

TEST(Resample, BilinearUpscaleUsesHalfPixelCentresAndClampsEdges) {
    const auto out = row({0.0f, 1.0f}, 4, ResampleFilter::Bilinear);
    ASSERT_EQ(out.size(), 4u);
    EXPECT_FLOAT_EQ(out[0], 0.0f);
    EXPECT_FLOAT_EQ(out[1], 0.25f);
    EXPECT_FLOAT_EQ(out[2], 0.75f);
    EXPECT_FLOAT_EQ(out[3], 1.0f);
}

TEST(Resample, NearestAndNearestExactPickDifferentSources) {
    const std::vector<float> in = {10.0f, 20.0f, 30.0f};
    EXPECT_EQ(row(in, 5, ResampleFilter::Nearest),
              (std::vector<float>{10.0f, 10.0f, 20.0f, 20.0f, 30.0f}));
    EXPECT_EQ(row(in, 5, ResampleFilter::NearestExact),
              (std::vector<float>{10.0f, 10.0f, 20.0f, 30.0f, 30.0f}));
}

TEST(Resample, AntialiasedBilinearDownscaleAveragesAWiderWindow) {
    // 4 -> 2: the triangle widens to 2 pixels, weights 1/8, 3/8, 3/8, 1/8 (edge clamped).
    const auto aa = row({0.0f, 1.0f, 2.0f, 3.0f}, 2, ResampleFilter::Bilinear, true);
    EXPECT_FLOAT_EQ(aa[0], 0.625f);
    EXPECT_FLOAT_EQ(aa[1], 2.375f);
    // Without antialias only the two nearest pixels count.
    const auto plain = row({0.0f, 1.0f, 2.0f, 3.0f}, 2, ResampleFilter::Bilinear);
    EXPECT_FLOAT_EQ(plain[0], 0.5f);
    EXPECT_FLOAT_EQ(plain[1], 2.5f);
}

TEST(Resample, BicubicUsesTorchsCoefficient) {
    // 2 -> 4, output 1: centre 0.25 -> taps at -1, 0, 1, 2 (clamped) with a = -0.75.
    const auto out = row({0.0f, 1.0f}, 4, ResampleFilter::Bicubic);
    auto cubic = [](double x) {
        const double a = -0.75;
        x = std::abs(x);
        return x <= 1 ? ((a + 2) * x - (a + 3)) * x * x + 1
                      : (x < 2 ? ((a * x - 5 * a) * x + 8 * a) * x - 4 * a : 0.0);
    };
    const double want = cubic(1.25) * 0 + cubic(0.25) * 0 + cubic(0.75) * 1 + cubic(1.75) * 1;
    EXPECT_NEAR(out[1], want, 1e-6);
    EXPECT_NE(out[1], 0.25f);  // not the bilinear value
}

TEST(Resample, FiltersKeepAConstantPlane) {
    const std::vector<float> in(6 * 5 * 2, 0.5f);
    for (ResampleFilter f :
         {ResampleFilter::Nearest, ResampleFilter::NearestExact, ResampleFilter::Bilinear,
          ResampleFilter::Bicubic, ResampleFilter::Lanczos}) {
        for (bool aa : {false, true}) {
            const auto out = resample_planes(in, 6, 5, 2, 13, 3, f, aa);
            ASSERT_EQ(out.size(), 13u * 3u * 2u);
            for (float v : out) EXPECT_NEAR(v, 0.5f, 1e-5);
        }
    }
}

TEST(Resample, PlanesAreResizedSeparately) {
    // Two 1x2 planes (columns of height 2) to 1x4: each keeps its own values.
    const auto out =
        resample_planes({0.0f, 1.0f, 5.0f, 5.0f}, 1, 2, 2, 1, 4, ResampleFilter::Bilinear);
    EXPECT_EQ(out, (std::vector<float>{0.0f, 0.25f, 0.75f, 1.0f, 5.0f, 5.0f, 5.0f, 5.0f}));
}

TEST(Resample, SameSizeIsACopy) {
    const std::vector<float> in = {1, 2, 3, 4};
    EXPECT_EQ(resample_planes(in, 2, 2, 1, 2, 2, ResampleFilter::Lanczos), in);
}

}  // namespace
}  // namespace ggdiff
