// fit_input_image: input images reach the output size as sd-cli loads them (centre cut to the
// output's aspect, then stb's box filter in sRGB space).
#include <gtest/gtest.h>

#include "image/input_fit.h"

namespace ggdiff {
namespace {

Image solid_rows(int w, int h, int top, int bottom) {
    // Rows [0, top) red, [h - bottom, h) blue, the rest green.
    Image img;
    img.width = w;
    img.height = h;
    img.channels = 3;
    img.pixels.assign(static_cast<size_t>(w) * h * 3, 0);
    for (int y = 0; y < h; ++y) {
        const int c = y < top ? 0 : y >= h - bottom ? 2 : 1;
        for (int x = 0; x < w; ++x) img.pixels[(static_cast<size_t>(y) * w + x) * 3 + c] = 255;
    }
    return img;
}

TEST(InputFit, SameSizeIsUnchanged) {
    const Image img = solid_rows(8, 6, 1, 1);
    const Image out = fit_input_image(img, 8, 6);
    EXPECT_EQ(out.pixels, img.pixels);
}

// 64x64 to 96x64 keeps the centre 64x42 (rows 11..52): bands of 11 rows at the top and bottom
// are cut away instead of squeezed in.
TEST(InputFit, CutsToTheOutputAspectAroundTheCentre) {
    const Image out = fit_input_image(solid_rows(64, 64, 11, 11), 96, 64);
    ASSERT_EQ(out.width, 96);
    ASSERT_EQ(out.height, 64);
    for (size_t i = 0; i < out.pixels.size(); i += 3) {
        ASSERT_EQ(out.pixels[i], 0) << "red from the cut top band at " << i / 3;
        ASSERT_EQ(out.pixels[i + 1], 255);
        ASSERT_EQ(out.pixels[i + 2], 0) << "blue from the cut bottom band at " << i / 3;
    }
    // The other way round: 96 wide to square cuts the sides.
    Image wide = solid_rows(96, 64, 0, 0);
    for (int y = 0; y < 64; ++y) {
        for (int x = 0; x < 16; ++x) wide.pixels[(static_cast<size_t>(y) * 96 + x) * 3] = 255;
    }
    const Image sq = fit_input_image(wide, 32, 32);
    for (size_t i = 0; i < sq.pixels.size(); i += 3) ASSERT_EQ(sq.pixels[i], 0);
}

// Halving a black/white checker averages in linear light: sRGB 188 (about 0.5 linear), not the
// 127 or 128 of averaging the stored values.
TEST(InputFit, BoxFilterAveragesInLinearLight) {
    Image checker;
    checker.width = checker.height = 4;
    checker.channels = 1;
    for (int y = 0; y < 4; ++y) {
        for (int x = 0; x < 4; ++x) checker.pixels.push_back((x + y) % 2 ? 255 : 0);
    }
    const Image out = fit_input_image(checker, 2, 2);
    ASSERT_EQ(out.pixels.size(), 4u);
    for (uint8_t v : out.pixels) EXPECT_NEAR(v, 188, 1);
}

}  // namespace
}  // namespace ggdiff
