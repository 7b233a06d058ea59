// --preview proj: the latent-to-RGB projections on known latents, byte for byte (the expected
// bytes are worked out by hand from the reference's coefficient tables: weight row of the lit
// channel plus the bias, mapped from [-1, 1] to [0, 255] and truncated).
#include <gtest/gtest.h>

#include "pipeline/latent_rgb.h"

namespace {

using ggdiff::HostTensor;
using ggdiff::Image;
using ggdiff::LatentRgb;
using ggdiff::project_latent_rgb;

// A [w, h, c, 1] latent of zeros with `value` at channel `c`, pixel (x, y).
HostTensor one_hot(int64_t w, int64_t h, int64_t channels, int64_t c, int64_t x, int64_t y,
                   float value = 1.0f) {
    HostTensor t({w, h, channels, 1});
    t.data[static_cast<size_t>((c * h + y) * w + x)] = value;
    return t;
}

std::vector<int> pixel(const Image& img, int x, int y) {
    const uint8_t* p = img.pixels.data() + (static_cast<size_t>(y) * img.width + x) * 3;
    return {p[0], p[1], p[2]};
}

TEST(LatentRgb, ChannelsPerFormat) {
    EXPECT_EQ(ggdiff::latent_rgb_channels(LatentRgb::None), 0);
    EXPECT_EQ(ggdiff::latent_rgb_channels(LatentRgb::Pixels), 3);
    EXPECT_EQ(ggdiff::latent_rgb_channels(LatentRgb::Sd), 4);
    EXPECT_EQ(ggdiff::latent_rgb_channels(LatentRgb::Sdxl), 4);
    EXPECT_EQ(ggdiff::latent_rgb_channels(LatentRgb::Sd3), 16);
    EXPECT_EQ(ggdiff::latent_rgb_channels(LatentRgb::Flux), 16);
    EXPECT_EQ(ggdiff::latent_rgb_channels(LatentRgb::Flux2), 128);
    EXPECT_EQ(ggdiff::latent_rgb_channels(LatentRgb::Wan21), 16);
    EXPECT_EQ(ggdiff::latent_rgb_channels(LatentRgb::Wan22), 48);
}

TEST(LatentRgb, Sd1ChannelZero) {
    // SD row 0 {0.337366, 0.216344, 0.257386} + bias {-0.017478, -0.055834, -0.105825}:
    // 0.319888 -> 168, 0.160510 -> 147, 0.151561 -> 146; a zero pixel is the bias alone:
    // -0.017478 -> 125, -0.055834 -> 120, -0.105825 -> 114.
    auto img = project_latent_rgb(one_hot(3, 2, 4, 0, 1, 1), LatentRgb::Sd);
    ASSERT_TRUE(img.ok()) << img.status().message();
    EXPECT_EQ(img->width, 3);
    EXPECT_EQ(img->height, 2);
    EXPECT_EQ(img->channels, 3);
    EXPECT_EQ(pixel(*img, 1, 1), (std::vector<int>{168, 147, 146}));
    EXPECT_EQ(pixel(*img, 0, 0), (std::vector<int>{125, 120, 114}));
}

TEST(LatentRgb, SdxlLastChannelNegative) {
    // SDXL row 3 {-0.211938, -0.149892, -0.080036} times -2, + bias {0.144381, -0.033313,
    // 0.007061}: 0.568257 -> 199, 0.266471 -> 161, 0.167133 -> 148.
    auto img = project_latent_rgb(one_hot(1, 1, 4, 3, 0, 0, -2.0f), LatentRgb::Sdxl);
    ASSERT_TRUE(img.ok()) << img.status().message();
    EXPECT_EQ(pixel(*img, 0, 0), (std::vector<int>{199, 161, 148}));
}

TEST(LatentRgb, Sd3HasNoBias) {
    // SD3 row 15 {-0.1418, -0.1457, -0.1259}, no bias: 0.4291 -> 109, 0.42715 -> 108,
    // 0.43705 -> 111.
    auto img = project_latent_rgb(one_hot(2, 2, 16, 15, 1, 0), LatentRgb::Sd3);
    ASSERT_TRUE(img.ok()) << img.status().message();
    EXPECT_EQ(pixel(*img, 1, 0), (std::vector<int>{109, 108, 111}));
    EXPECT_EQ(pixel(*img, 0, 0), (std::vector<int>{127, 127, 127}));
}

TEST(LatentRgb, FluxAndWanDiffer) {
    // Both 16 channels: FLUX.1 row 6 {0.033605, 0.138999, 0.068517} + bias {0.024600,
    // -0.006937, -0.008089}: 0.058205 -> 134, 0.132062 -> 144, 0.060428 -> 135.
    // Wan 2.1 row 6 {-0.245369, -0.506846, -0.117010} + bias {-0.270270, -0.234976,
    // -0.456853}: -0.515639 -> 61, -0.741822 -> 32, -0.573863 -> 54.
    const HostTensor z = one_hot(1, 1, 16, 6, 0, 0);
    auto flux = project_latent_rgb(z, LatentRgb::Flux);
    auto wan = project_latent_rgb(z, LatentRgb::Wan21);
    ASSERT_TRUE(flux.ok() && wan.ok());
    EXPECT_EQ(pixel(*flux, 0, 0), (std::vector<int>{134, 144, 135}));
    EXPECT_EQ(pixel(*wan, 0, 0), (std::vector<int>{61, 32, 54}));
}

TEST(LatentRgb, Wan22Has48Channels) {
    // Wan 2.2 bias {0.013160, -0.096492, -0.071323}: 129, 115, 118.
    auto img = project_latent_rgb(HostTensor({1, 1, 48, 1}), LatentRgb::Wan22);
    ASSERT_TRUE(img.ok()) << img.status().message();
    EXPECT_EQ(pixel(*img, 0, 0), (std::vector<int>{129, 115, 118}));
}

TEST(LatentRgb, Flux2UnpacksTwoByTwoPatches) {
    // Channel 4 * 3 + 1 is unpacked channel 3 at sub-pixel (x 1, y 0): FLUX.2 row 3
    // {0.039384, 0.074167, 0.119789} + bias {-0.028738, -0.098463, -0.107619}: 0.010646 ->
    // 128, -0.024296 -> 124, 0.012170 -> 129; every other pixel is the bias alone: -0.028738
    // -> 123, -0.098463 -> 114, -0.107619 -> 113.
    auto img = project_latent_rgb(one_hot(2, 1, 128, 13, 1, 0), LatentRgb::Flux2);
    ASSERT_TRUE(img.ok()) << img.status().message();
    EXPECT_EQ(img->width, 4);
    EXPECT_EQ(img->height, 2);
    EXPECT_EQ(pixel(*img, 3, 0), (std::vector<int>{128, 124, 129}));
    for (int y = 0; y < 2; ++y) {
        for (int x = 0; x < 4; ++x) {
            if (x == 3 && y == 0) continue;
            EXPECT_EQ(pixel(*img, x, y), (std::vector<int>{123, 114, 113})) << x << "," << y;
        }
    }
}

TEST(LatentRgb, PixelSpaceIsTheImage) {
    HostTensor t({2, 1, 3, 1});
    t.data = {-1.0f, 1.0f, 0.0f, 0.5f, 2.0f, -3.0f};  // R plane, G plane, B plane
    auto img = project_latent_rgb(t, LatentRgb::Pixels);
    ASSERT_TRUE(img.ok()) << img.status().message();
    EXPECT_EQ(pixel(*img, 0, 0), (std::vector<int>{0, 127, 255}));
    EXPECT_EQ(pixel(*img, 1, 0), (std::vector<int>{255, 191, 0}));
}

TEST(LatentRgb, FramesAreInterleavedPlanes) {
    // Two SD frames: channel c of frame f is plane c * 2 + f. Frame 1's channel 0 lit.
    HostTensor t({1, 1, 8, 1});
    t.data[1] = 1.0f;
    auto f0 = project_latent_rgb(t, LatentRgb::Sd, 2, 0);
    auto f1 = project_latent_rgb(t, LatentRgb::Sd, 2, 1);
    ASSERT_TRUE(f0.ok() && f1.ok());
    EXPECT_EQ(pixel(*f0, 0, 0), (std::vector<int>{125, 120, 114}));
    EXPECT_EQ(pixel(*f1, 0, 0), (std::vector<int>{168, 147, 146}));
}

TEST(LatentRgb, RefusesUnknownFormatsAndWrongShapes) {
    EXPECT_FALSE(project_latent_rgb(HostTensor({1, 1, 4, 1}), LatentRgb::None).ok());
    auto wrong = project_latent_rgb(HostTensor({1, 1, 16, 1}), LatentRgb::Sd);
    ASSERT_FALSE(wrong.ok());
    EXPECT_NE(wrong.status().message().find("16 channels"), std::string::npos)
        << wrong.status().message();
    EXPECT_FALSE(project_latent_rgb(HostTensor({1, 1, 4, 1}), LatentRgb::Sd, 1, 1).ok());
}

}  // namespace
