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
    const QwenImageRope r = qwen_image_rope(cfg, 2, 8, 4, 3, {{4, 4}}, false);
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

    const QwenImageRope layered = qwen_image_rope(cfg, 2, 8, 4, 3, {{4, 4}, {4, 4}}, true);
    EXPECT_NEAR(frame_pos(layered, 3 + 16), -1.0f, 1e-5);
    EXPECT_NEAR(frame_pos(layered, 3 + 16 + 4), -2.0f, 1e-5);
}

}  // namespace
}  // namespace ggdiff::models
