// Seamless tiling's RoPE (nn::rope_angle, nn::wrap_grid and rope_table's wrap lengths)
// against angles computed by hand for small cases.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "nn/dit.h"

namespace {

using ggdiff::nn::rope_angle;
using ggdiff::nn::rope_table;
using ggdiff::nn::RopeTable;
using ggdiff::nn::RopeWrap;
using ggdiff::nn::wrap_grid;

constexpr double kTwoPi = 6.283185307179586;

TEST(RopeWrap, NoWrapIsPositionTimesFrequency) {
    EXPECT_FLOAT_EQ(rope_angle(3.0f, 0.25f, 0), 0.75f);
    EXPECT_FLOAT_EQ(rope_angle(-2.0f, 0.1f, 0), -0.2f);
}

// dim 8, theta 10000: omega_j = 10000^(-j * 0.75 / 3) = 1, 0.1, 0.01, 0.001. Over a wrap of 4
// positions they turn 4 / 2pi = 0.64, 0.064, 0.0064, 0.00064 times: rounded 1, 0, 0, 0. So
// pair 0 turns once per 4 positions (angle pos * pi / 2) and the others stand still.
TEST(RopeWrap, FrequenciesMoveToWholeTurnsOverTheWrap) {
    const std::vector<float> ids = {0.0f, 1.0f, 2.0f, 3.0f, 4.0f};  // one axis, 5 tokens
    const RopeTable plain = rope_table(ids, {8}, 10000.0f);
    const RopeTable wrapped = rope_table(ids, {8}, 10000.0f, {4, 4, 4, 4, 4});
    ASSERT_EQ(wrapped.pairs, 4);
    ASSERT_EQ(wrapped.tokens, 5);
    const double omega[4] = {1.0, 0.1, 0.01, 0.001};
    for (int t = 0; t < 5; ++t) {
        for (int j = 0; j < 4; ++j) {
            const size_t i = static_cast<size_t>(t * 4 + j);
            const double a = t * omega[j];
            EXPECT_NEAR(plain.cos[i], std::cos(a), 1e-5) << "token " << t << " pair " << j;
            EXPECT_NEAR(plain.sin[i], std::sin(a), 1e-5) << "token " << t << " pair " << j;
            const double w = j == 0 ? t * kTwoPi / 4.0 : 0.0;
            EXPECT_NEAR(wrapped.cos[i], std::cos(w), 1e-5) << "token " << t << " pair " << j;
            EXPECT_NEAR(wrapped.sin[i], std::sin(w), 1e-5) << "token " << t << " pair " << j;
        }
    }
    // Position 4 is position 0 again, position 3 its neighbour.
    for (int j = 0; j < 4; ++j) {
        EXPECT_NEAR(wrapped.cos[16 + j], wrapped.cos[j], 1e-5);
        EXPECT_NEAR(wrapped.sin[16 + j], wrapped.sin[j], 1e-5);
    }
}

// A frequency of 2.6 turns over the wrap rounds to 3 and one of 1.4 turns to 1; a frequency
// below half a turn stops.
TEST(RopeWrap, RoundsToTheNearestWholeTurn) {
    const int wrap = 8;
    const float omega_26 = static_cast<float>(2.6 * kTwoPi / wrap);
    const float omega_14 = static_cast<float>(1.4 * kTwoPi / wrap);
    const float omega_04 = static_cast<float>(0.4 * kTwoPi / wrap);
    EXPECT_NEAR(rope_angle(1.0f, omega_26, wrap), 3.0 * kTwoPi / wrap, 1e-5);
    EXPECT_NEAR(rope_angle(5.0f, omega_14, wrap), 5.0 * kTwoPi / wrap, 1e-5);
    EXPECT_EQ(rope_angle(5.0f, omega_04, wrap), 0.0f);
    // Negative (centred) positions wrap the same way.
    EXPECT_NEAR(rope_angle(-2.0f, omega_14, wrap), -2.0 * kTwoPi / wrap, 1e-5);
}

TEST(RopeWrap, GridMarksOnlyItsTokensAndAxes) {
    std::vector<int> lengths;
    // 3 axes; 2 text tokens, then a 2 x 3 grid wrapping on columns only.
    wrap_grid(lengths, 3, 2, 2, 3, RopeWrap{true, false});
    ASSERT_EQ(lengths.size(), 3u * 8u);
    for (size_t t = 0; t < 8; ++t) {
        EXPECT_EQ(lengths[3 * t + 0], 0) << t;
        EXPECT_EQ(lengths[3 * t + 1], 0) << t;
        EXPECT_EQ(lengths[3 * t + 2], t >= 2 ? 3 : 0) << t;
    }
    // A second grid (a reference) wraps on its own size, on both axes.
    wrap_grid(lengths, 3, 8, 4, 1, RopeWrap{true, true});
    ASSERT_EQ(lengths.size(), 3u * 12u);
    for (size_t t = 8; t < 12; ++t) {
        EXPECT_EQ(lengths[3 * t + 1], 4) << t;
        EXPECT_EQ(lengths[3 * t + 2], 1) << t;
    }
    // No wrap: nothing changes.
    std::vector<int> none;
    wrap_grid(none, 3, 0, 4, 4, RopeWrap{});
    EXPECT_TRUE(none.empty());
}

// Several axes: only the wrapped (column) axis of the image tokens changes.
TEST(RopeWrap, TableWrapsOnlyTheMarkedAxis) {
    // 3 axes of 4 dims each; a text token (0, 0, 0), then a 1 x 4 image row.
    std::vector<float> ids = {0, 0, 0};
    for (int x = 0; x < 4; ++x) {
        ids.insert(ids.end(), {0.0f, 0.0f, static_cast<float>(x)});
    }
    std::vector<int> lengths;
    wrap_grid(lengths, 3, 1, 1, 4, RopeWrap{true, true});
    const RopeTable plain = rope_table(ids, {4, 4, 4}, 10000.0f);
    const RopeTable wrapped = rope_table(ids, {4, 4, 4}, 10000.0f, lengths);
    ASSERT_EQ(wrapped.pairs, 6);
    // Axes 0 and 1 (positions 0) are identical; axis 2, pair 0 (omega 1, 4/2pi -> 1 turn)
    // turns pi/2 per column, pair 1 (omega 0.01) stands still.
    for (int t = 0; t < 5; ++t) {
        for (int j = 0; j < 4; ++j) {
            const size_t i = static_cast<size_t>(t * 6 + j);
            EXPECT_FLOAT_EQ(wrapped.cos[i], plain.cos[i]);
            EXPECT_FLOAT_EQ(wrapped.sin[i], plain.sin[i]);
        }
        const double col = t == 0 ? 0.0 : t - 1;
        EXPECT_NEAR(wrapped.sin[static_cast<size_t>(t * 6 + 4)], std::sin(col * kTwoPi / 4), 1e-5);
        EXPECT_NEAR(wrapped.sin[static_cast<size_t>(t * 6 + 5)], 0.0, 1e-6);
    }
}

}  // namespace
