// HiDream-O1-Image's edit mode inputs (families/hidream_o1/edit.h): the RoPE positions of a
// sequence with a vision image in the prompt, the generated image and a reference, worked out by
// hand from stable-diffusion.cpp's build_position_ids (text runs continue after the highest time
// position; the generated image at 4096; the reference after it), the text-to-image sequence
// giving the positions the network always used, and the sizes the references are brought to.
#include <gtest/gtest.h>

#include <vector>

#include "families/hidream_o1/dit.h"
#include "families/hidream_o1/edit.h"

namespace ggdiff::models {
namespace {

constexpr int32_t VS = kHiDreamO1VisionStartToken, IMG = kHiDreamO1ImageToken;

TEST(HiDreamO1Edit, TextToImagePositionsAreTheNetworksOwn) {
    const std::vector<int32_t> ids = {1, 2, 3, 4, 5, VS, IMG, IMG, IMG};
    EXPECT_EQ(hidream_o1_sequence_positions(ids, {{1, 2, 2, true}}), hidream_o1_positions(5, 2, 2));
}

TEST(HiDreamO1Edit, VisionImageGeneratedImageAndReference) {
    // "a b <vs> [1x2 vision rows] <ve> c d", the 2x2 image, a 1x2 reference.
    const int32_t VE = 151653;
    const std::vector<int32_t> ids = {10, 11, VS, IMG, IMG, VE, 12, 13, VS, IMG, IMG, IMG, VS, IMG};
    const std::vector<int32_t> pos =
        hidream_o1_sequence_positions(ids, {{1, 1, 2, false}, {1, 2, 2, true}, {1, 1, 2, true}});
    const std::vector<int32_t> t = {0, 1, 2, 3, 3, 4, 5, 6, 4096, 4096, 4096, 4096, 4097, 4097};
    const std::vector<int32_t> h = {0, 1, 2, 3, 3, 4, 5, 6, 4096, 4096, 4097, 4097, 4097, 4097};
    const std::vector<int32_t> w = {0, 1, 2, 3, 4, 4, 5, 6, 4096, 4097, 4096, 4097, 4097, 4098};
    std::vector<int32_t> want = t;
    want.insert(want.end(), h.begin(), h.end());
    want.insert(want.end(), w.begin(), w.end());
    want.insert(want.end(), 14, 0);
    EXPECT_EQ(pos, want);
}

Image patterned(int w, int h) {
    Image img;
    img.width = w;
    img.height = h;
    img.channels = 3;
    for (int i = 0; i < w * h * 3; ++i) img.pixels.push_back(static_cast<uint8_t>((i * 7) % 256));
    return img;
}

TEST(HiDreamO1Edit, ReferenceSizes) {
    // One 64x64 reference for a 64x64 output: kept as it is (bicubic at the same size is the
    // identity), the tower's copy at 384x384.
    const Image a = patterned(64, 64);
    HiDreamO1EditImage e = hidream_o1_edit_image(a, 1, 64, 64);
    ASSERT_EQ(e.pixels.ne, (std::vector<int64_t>{64, 64, 3}));
    EXPECT_EQ(e.vision.ne, (std::vector<int64_t>{384, 384, 3}));
    EXPECT_NEAR(e.pixels.data[5], a.pixels[15] / 255.0f * 2.0f - 1.0f, 1e-5);
    // Two references: max size 64 * 48 / 64 = 48; a 96x64 one scales by sqrt(48^2 / 6144) to
    // 58.8 x 39.2, whole patches 32x32 (area <= 48^2): resized to 48x32, the middle 32 kept.
    e = hidream_o1_edit_image(patterned(96, 64), 2, 64, 64);
    EXPECT_EQ(e.pixels.ne, (std::vector<int64_t>{32, 32, 3}));
    EXPECT_EQ(e.vision.ne, (std::vector<int64_t>{384, 384, 3}));
    // A 64x32 reference for a 128x64 output: max size 128, scale sqrt(128^2 / 2048) = 2.83 ->
    // 181.0 x 90.5, whole patches 160x64; resized to 160x80 (the width fits first), rows 8..71
    // kept. The tower's copy at that 2.5:1 shape: sqrt(384^2 * 2.5) = 607 -> 576 wide,
    // 607 / 2.5 = 242 -> 224 high.
    e = hidream_o1_edit_image(patterned(64, 32), 1, 128, 64);
    EXPECT_EQ(e.pixels.ne, (std::vector<int64_t>{160, 64, 3}));
    EXPECT_EQ(e.vision.ne, (std::vector<int64_t>{576, 224, 3}));
}

}  // namespace
}  // namespace ggdiff::models
