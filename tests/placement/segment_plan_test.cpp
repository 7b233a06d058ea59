// The --max-vram graph-cutting planner (placement/segment_plan.h): exact plans.
#include "placement/segment_plan.h"

#include <gtest/gtest.h>

namespace ggdiff::placement {
namespace {

constexpr uint64_t kMiB = 1048576;

// Non-block weights of `resident` MiB, then one tensor per block of the given MiB.
std::vector<TensorRecord> model(uint64_t resident, const std::vector<uint64_t>& blocks) {
    std::vector<TensorRecord> t;
    t.push_back({"embed.weight", resident * kMiB, -1, {}, true, "GET_ROWS"});
    for (size_t i = 0; i < blocks.size(); ++i) {
        t.push_back({"blocks." + std::to_string(i) + ".w",
                     blocks[i] * kMiB,
                     static_cast<int>(i),
                     {},
                     true,
                     "MUL_MAT"});
    }
    return t;
}

std::vector<std::pair<int, int>> ranges(const SegmentPlan& p) {
    std::vector<std::pair<int, int>> r;
    for (const Segment& s : p.segments) r.emplace_back(s.begin, s.end);
    return r;
}

TEST(SegmentPlan, FitsWholeIsOneSegment) {
    auto p = plan_segments("diffusion", model(10, {20, 20, 20}), 70 * kMiB, false);
    ASSERT_TRUE(p) << p.status().message();
    EXPECT_FALSE(p->cut);
    EXPECT_EQ(ranges(*p), (std::vector<std::pair<int, int>>{{0, 3}}));
    EXPECT_EQ(segment_log_lines(*p)[0],
              "diffusion: 70.0 MiB of weights fit the 70.0 MiB budget whole");
}

TEST(SegmentPlan, GreedyRangesUnderTheCapacity) {
    // 100 MiB budget, 10 resident: 90 per segment -> [0,3) 80, [3,5) 90, [5,6) 50.
    auto p = plan_segments("diffusion", model(10, {30, 30, 20, 40, 50, 50}), 100 * kMiB, false);
    ASSERT_TRUE(p) << p.status().message();
    EXPECT_TRUE(p->cut);
    EXPECT_EQ(p->segment_capacity, 90 * kMiB);
    EXPECT_EQ(ranges(*p), (std::vector<std::pair<int, int>>{{0, 3}, {3, 5}, {5, 6}}));
    EXPECT_EQ(p->segments[1].bytes, 90 * kMiB);
    const auto lines = segment_log_lines(*p);
    ASSERT_EQ(lines.size(), 3u);
    EXPECT_EQ(lines[1], "diffusion segment 1: blocks [3, 5), 90.0 MiB");
}

TEST(SegmentPlan, StreamingHalvesTheCapacity) {
    // Two segments resident at once: (100 - 10) / 2 = 45 per segment.
    auto p = plan_segments("te", model(10, {30, 10, 20, 40}), 100 * kMiB, true);
    ASSERT_TRUE(p) << p.status().message();
    EXPECT_TRUE(p->streamed);
    EXPECT_EQ(p->segment_capacity, 45 * kMiB);
    EXPECT_EQ(ranges(*p), (std::vector<std::pair<int, int>>{{0, 2}, {2, 3}, {3, 4}}));
}

TEST(SegmentPlan, StreamingKeepsLeadingBlocksWhereTwoSlotsStillFit) {
    // 200 MiB budget, 20 resident: 180 left. Keeping blocks [0,2) (80) leaves 100 = two slots
    // of the largest block streamed (50); keeping [0,3) would need 120 + 100. The rest streams
    // in segments of (180 - 80) / 2 = 50 MiB.
    const auto blocks = std::vector<uint64_t>{40, 40, 40, 40, 30, 30, 50};
    auto p = plan_segments("diffusion", model(20, blocks), 200 * kMiB, true);
    ASSERT_TRUE(p) << p.status().message();
    EXPECT_EQ(ranges(*p),
              (std::vector<std::pair<int, int>>{{0, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 6}, {6, 7}}));
    EXPECT_EQ(p->resident_segments, 1);
    EXPECT_EQ(p->segment_capacity, 50 * kMiB);
    EXPECT_EQ(p->streamed_bytes(), 190 * kMiB);
    const auto lines = segment_log_lines(*p);
    ASSERT_EQ(lines.size(), 6u);
    EXPECT_EQ(lines[0], "diffusion segment 0: blocks [0, 2), 80.0 MiB (kept on the device)");
    EXPECT_EQ(lines[1], "diffusion segment 1: blocks [2, 3), 40.0 MiB");
    // Cutting alone keeps nothing: every segment goes through the one slot.
    auto c = plan_segments("diffusion", model(20, blocks), 200 * kMiB, false);
    ASSERT_TRUE(c) << c.status().message();
    EXPECT_EQ(ranges(*c), (std::vector<std::pair<int, int>>{{0, 4}, {4, 7}}));
    EXPECT_EQ(c->resident_segments, 0);
    EXPECT_EQ(c->streamed_bytes(), 270 * kMiB);
}

TEST(SegmentPlan, ABlockLargerThanASegmentIsNamed) {
    auto p = plan_segments("diffusion", model(10, {30, 95, 20}), 100 * kMiB, false);
    ASSERT_FALSE(p);
    EXPECT_EQ(p.status().message(),
              "diffusion: segment 1 (block 1, 95.0 MiB) does not fit: capacity 90.0 MiB, short by "
              "5.0 MiB");
    auto s = plan_segments("diffusion", model(10, {30, 50, 20}), 100 * kMiB, true);
    ASSERT_FALSE(s);
    EXPECT_NE(s.status().message().find("capacity 45.0 MiB (half of what is left"),
              std::string::npos)
        << s.status().message();
}

TEST(SegmentPlan, ResidentWeightsOverTheBudgetOrNoBlocks) {
    auto p = plan_segments("vae", model(120, {10}), 100 * kMiB, false);
    ASSERT_FALSE(p);
    EXPECT_NE(p.status().message().find("alone exceed the 100.0 MiB budget (short by 20.0 MiB)"),
              std::string::npos)
        << p.status().message();
    auto q = plan_segments("vae", model(120, {}), 100 * kMiB, false);
    ASSERT_FALSE(q);
    EXPECT_NE(q.status().message().find("no blocks to cut at"), std::string::npos);
}

}  // namespace
}  // namespace ggdiff::placement
