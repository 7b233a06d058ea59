// The Wan DiT's text context folding (families/wan/dit.h compact_wan_context): umT5's zeroed
// padding rows become one row per item with key weight ln(count), the other rows keep their
// order, shorter items are filled with hidden (-inf) rows, and an item without padding keeps
// every row with weight 0.
#include <gtest/gtest.h>

#include <cmath>

#include "families/wan/dit.h"

namespace ggdiff::models {
namespace {

constexpr int64_t kWidth = 3;

// Rows of kWidth values: row r is {r+1, r+1, r+1} when r is in `real`, else zeros.
std::vector<float> context(int64_t rows, const std::vector<int64_t>& real) {
    std::vector<float> t(static_cast<size_t>(rows * kWidth), 0.0f);
    for (int64_t r : real) {
        for (int64_t i = 0; i < kWidth; ++i) t[r * kWidth + i] = static_cast<float>(r + 1);
    }
    return t;
}

TEST(WanContext, PaddingFoldsIntoOneWeightedRowPerItem) {
    // Item 0: a prompt of 3 tokens and 509 zero rows; item 1: 1 token (an empty negative
    // prompt's EOS) and 511 zero rows.
    const std::vector<float> a = context(512, {0, 1, 2}), b = context(512, {0});
    const WanContext c = compact_wan_context({&a, &b}, kWidth);
    ASSERT_EQ(c.rows, 4);
    ASSERT_EQ(c.tokens.size(), static_cast<size_t>(2 * 4 * kWidth));
    ASSERT_EQ(c.mask.size(), 8u);
    // Item 0: the three rows in order, then the zero row standing for 509.
    for (int64_t r = 0; r < 3; ++r) EXPECT_EQ(c.tokens[r * kWidth], static_cast<float>(r + 1));
    EXPECT_EQ(c.tokens[3 * kWidth], 0.0f);
    EXPECT_EQ(c.mask[0], 0.0f);
    EXPECT_EQ(c.mask[2], 0.0f);
    EXPECT_FLOAT_EQ(c.mask[3], std::log(509.0f));
    // Item 1: its token, the zero row for 511, then two hidden filler rows.
    const float* t1 = c.tokens.data() + 4 * kWidth;
    EXPECT_EQ(t1[0], 1.0f);
    EXPECT_EQ(t1[kWidth], 0.0f);
    EXPECT_EQ(c.mask[4], 0.0f);
    EXPECT_FLOAT_EQ(c.mask[5], std::log(511.0f));
    EXPECT_TRUE(std::isinf(c.mask[6]) && c.mask[6] < 0);
    EXPECT_TRUE(std::isinf(c.mask[7]) && c.mask[7] < 0);
}

TEST(WanContext, WithoutPaddingEveryRowStaysAtWeightZero) {
    // A zero row between real ones is padding too (it is the same key); a context without any
    // zero row gets no extra row.
    const std::vector<float> full = context(4, {0, 1, 2, 3}), gap = context(4, {0, 2, 3});
    const WanContext f = compact_wan_context({&full}, kWidth);
    ASSERT_EQ(f.rows, 4);
    for (float m : f.mask) EXPECT_EQ(m, 0.0f);
    const WanContext g = compact_wan_context({&gap}, kWidth);
    ASSERT_EQ(g.rows, 4);
    EXPECT_EQ(g.tokens[kWidth], 3.0f);  // row 2 moved up
    EXPECT_EQ(g.tokens[2 * kWidth], 4.0f);
    EXPECT_EQ(g.mask[3], 0.0f);  // log(1): the one zero row at its own weight
}

}  // namespace
}  // namespace ggdiff::models
