// The image conditions of the generate path: inpainting masks (weights, latent-size
// reductions, masked image, blend) and the ControlNet hint, on small hand-made inputs.
#include <gtest/gtest.h>

#include "pipeline/image_conditions.h"

namespace ggdiff {
namespace {

Image grey_image(int w, int h, const std::vector<uint8_t>& px) {
    Image img;
    img.width = w;
    img.height = h;
    img.channels = 1;
    img.pixels = px;
    return img;
}

TEST(ImageConditions, MaskWeightsFromGreyAndColour) {
    const Image m = grey_image(2, 2, {0, 100, 200, 255});
    const std::vector<float> soft = mask_weights(m, 2, 2, false);
    ASSERT_EQ(soft.size(), 4u);
    EXPECT_FLOAT_EQ(soft[0], 0.0f);
    EXPECT_FLOAT_EQ(soft[1], 100 / 255.0f);
    EXPECT_FLOAT_EQ(soft[2], 200 / 255.0f);
    EXPECT_FLOAT_EQ(soft[3], 1.0f);
    // Inpainting models get binary masks: grey rounds to the nearer end.
    EXPECT_EQ(mask_weights(m, 2, 2, true), (std::vector<float>{0, 0, 1, 1}));
    // An RGB(A) mask counts by its brightness.
    Image rgba;
    rgba.width = 2;
    rgba.height = 1;
    rgba.channels = 4;
    rgba.pixels = {255, 255, 255, 0, 0, 0, 0, 255};
    EXPECT_EQ(mask_weights(rgba, 2, 1, true), (std::vector<float>{1, 0}));
}

TEST(ImageConditions, MaskOfAnotherSizeIsResized) {
    // A 2x2 mask with its right half white becomes a 4x4 mask with its right half white.
    const Image m = grey_image(2, 2, {0, 255, 0, 255});
    const std::vector<float> w = mask_weights(m, 4, 4, true);
    ASSERT_EQ(w.size(), 16u);
    for (int y = 0; y < 4; ++y) {
        for (int x = 0; x < 4; ++x) EXPECT_EQ(w[y * 4 + x], x >= 2 ? 1.0f : 0.0f) << x << "," << y;
    }
}

TEST(ImageConditions, BlockMaxAndDilation) {
    // 4x4 pixels, one repainted pixel in the lower right 2x2 block.
    std::vector<float> m(16, 0.0f);
    m[2 * 4 + 3] = 0.5f;
    EXPECT_EQ(block_max(m, 4, 4, 2), (std::vector<float>{0, 0, 0, 0.5f}));
    // A 3x3 latent with the centre set grows to everything; a corner grows to its 2x2.
    std::vector<float> centre(9, 0.0f);
    centre[4] = 1.0f;
    EXPECT_EQ(dilate3x3(centre, 3, 3), std::vector<float>(9, 1.0f));
    std::vector<float> corner(9, 0.0f);
    corner[0] = 1.0f;
    EXPECT_EQ(dilate3x3(corner, 3, 3), (std::vector<float>{1, 1, 0, 1, 1, 0, 0, 0, 0}));
}

TEST(ImageConditions, GreyOutConcatAndBlend) {
    HostTensor img({2, 1, 3, 1});
    img.data = {1, -1, 0.5f, 0.5f, -0.2f, 0.8f};
    grey_out(img, {1.0f, 0.0f});
    EXPECT_EQ(img.data, (std::vector<float>{0, -1, 0, 0.5f, 0, 0.8f}));

    HostTensor latent({2, 1, 2, 1});
    latent.data = {1, 2, 3, 4};
    const HostTensor c = inpaint_concat({1.0f, 0.0f}, latent);
    EXPECT_EQ(c.ne, (std::vector<int64_t>{2, 1, 3, 1}));
    EXPECT_EQ(c.data, (std::vector<float>{1, 0, 1, 2, 3, 4}));

    std::vector<float> x = {10, 10, 10, 10};
    blend_latent(x, {1, 2, 3, 4}, {1.0f, 0.25f});
    EXPECT_EQ(x, (std::vector<float>{10, 2 * 0.75f + 10 * 0.25f, 10, 4 * 0.75f + 10 * 0.25f}));
}

TEST(ImageConditions, ControlHintIsRgbAtTheOutputSize) {
    Image rgb;
    rgb.width = 2;
    rgb.height = 2;
    rgb.channels = 3;
    rgb.pixels = {255, 0, 0, 0, 255, 0, 0, 0, 255, 51, 51, 51};
    const ControlHint h = make_control_hint(rgb, 2, 2, false, 0.7f);
    EXPECT_FLOAT_EQ(h.strength, 0.7f);
    ASSERT_EQ(h.image.ne, (std::vector<int64_t>{2, 2, 3, 1}));
    // Planar channels in [0, 1]: red plane, green plane, blue plane.
    EXPECT_EQ(h.image.data, (std::vector<float>{1, 0, 0, 0.2f, 0, 1, 0, 0.2f, 0, 0, 1, 0.2f}));
    // Grey images and other sizes are converted.
    const ControlHint g = make_control_hint(grey_image(1, 1, {255}), 4, 2, false, 1.0f);
    EXPECT_EQ(g.image.ne, (std::vector<int64_t>{4, 2, 3, 1}));
    EXPECT_EQ(g.image.data, std::vector<float>(24, 1.0f));
}

}  // namespace
}  // namespace ggdiff
