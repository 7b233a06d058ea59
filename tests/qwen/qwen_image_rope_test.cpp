// Qwen Image's 3-axis RoPE positions (frame, row, column), checked through the angle of the
// first frame-axis pair, which turns at exactly the position (omega 1): text tokens count
// from max(h, w) / 4 on every axis, image tokens have frame f and centred rows and columns,
// reference tokens are frames 1, 2, ... (Qwen Image) or -1, -2, ... (Layered).
#include <gtest/gtest.h>

#include <cmath>

#include "families/qwen_image/dit.h"

namespace ggdiff::models {
namespace {

// Position of `token` on the frame axis (pair 0 turns at omega = 1).
float frame_pos(const QwenImageRope& r, int64_t token) {
    return std::atan2(r.sin[token * r.pairs], r.cos[token * r.pairs]);
}
// Position on the row axis: its first pair (after the frame axis' 8) also has omega 1.
float row_pos(const QwenImageRope& r, int64_t token) {
    return std::atan2(r.sin[token * r.pairs + 8], r.cos[token * r.pairs + 8]);
}

TEST(QwenImageRope, TextImageAndReferencePositions) {
    QwenImageConfig cfg;
    // Latent 8x4 (4x2 patches), 2 frames, 3 text tokens, one 4x4 reference.
    const QwenImageRope r = qwen_image_rope(cfg, 2, 8, 4, 3, {{4, 4}}, QwenRefIndex::Increase);
    EXPECT_EQ(r.pairs, 64);
    EXPECT_EQ(r.tokens, 3 + 2 * 4 * 2 + 2 * 2);
    // Text: start max(2, 4) / 2 = 2.
    EXPECT_NEAR(frame_pos(r, 0), 2.0f, 1e-5);
    EXPECT_NEAR(frame_pos(r, 2), -2.2831853f, 1e-5);  // 4 wraps to 4 - 2 pi
    // Image: frame 0 then frame 1; rows from -h/2 = -1.
    EXPECT_NEAR(frame_pos(r, 3), 0.0f, 1e-6);
    EXPECT_NEAR(row_pos(r, 3), -1.0f, 1e-5);
    EXPECT_NEAR(row_pos(r, 3 + 4), 0.0f, 1e-5);
    EXPECT_NEAR(frame_pos(r, 3 + 8), 1.0f, 1e-5);
    // The reference: frame 1 (increasing).
    EXPECT_NEAR(frame_pos(r, 3 + 16), 1.0f, 1e-5);

    const QwenImageRope layered =
        qwen_image_rope(cfg, 2, 8, 4, 3, {{4, 4}, {4, 4}}, QwenRefIndex::Decrease);
    EXPECT_NEAR(frame_pos(layered, 3 + 16), -1.0f, 1e-5);
    EXPECT_NEAR(frame_pos(layered, 3 + 16 + 4), -2.0f, 1e-5);

    // Fixed (the default without --increase-ref-index): every reference at frame 1, rows from
    // 0, the second 6x4 reference (taller than wide) placed to the right of the first: its
    // columns start at the first's latent width 4.
    const QwenImageRope fixed =
        qwen_image_rope(cfg, 1, 8, 4, 3, {{4, 4}, {4, 6}}, QwenRefIndex::Fixed);
    const int64_t first = 3 + 8, second = first + 4;
    EXPECT_NEAR(frame_pos(fixed, first), 1.0f, 1e-5);
    EXPECT_NEAR(row_pos(fixed, first), 0.0f, 1e-5);
    EXPECT_NEAR(frame_pos(fixed, second), 1.0f, 1e-5);
    EXPECT_NEAR(row_pos(fixed, second), 0.0f, 1e-5);
    // Column axis: its first pair comes after the frame (8) and row (28) pairs.
    EXPECT_NEAR(
        std::atan2(fixed.sin[second * fixed.pairs + 36], fixed.cos[second * fixed.pairs + 36]),
        -2.2831853f, 1e-5);  // column 4 wraps to 4 - 2 pi
}

}  // namespace
}  // namespace ggdiff::models
