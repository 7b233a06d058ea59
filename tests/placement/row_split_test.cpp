// Row-split selection: which weights go to split buffers, proportions and fallbacks.
#include <gtest/gtest.h>

#include "placement/row_split.h"
#include "placement/units.h"

namespace ggdiff::placement {
namespace {

TensorRecord weight(const std::string& name, std::vector<int64_t> ne, int block,
                    const std::string& op = "MUL_MAT") {
    TensorRecord r;
    r.name = name;
    r.ne = std::move(ne);
    r.block = block;
    r.op = op;
    uint64_t n = 2;  // F16
    for (int64_t v : r.ne) n *= static_cast<uint64_t>(v);
    r.bytes = n;
    return r;
}

DeviceInfo cuda(const std::string& name, uint64_t free_bytes) {
    DeviceInfo d;
    d.name = name;
    d.type = DeviceType::Gpu;
    d.free_bytes = free_bytes;
    d.registry = "CUDA";
    d.has_split_buffer = true;
    return d;
}

TEST(RowSplit, Candidates) {
    EXPECT_TRUE(is_row_split_candidate(weight("blocks.0.qkv.weight", {3072, 9216}, 0)));
    EXPECT_TRUE(is_row_split_candidate(weight("blocks.0.qkv.weight", {256, 256}, 0)));
    EXPECT_TRUE(is_row_split_candidate(weight("blocks.0.qkv.weight", {256, 256, 1, 1}, 0)));
    EXPECT_TRUE(is_row_split_candidate(weight("blocks.0.qkv.weight", {512, 512}, 0, "")));
    EXPECT_FALSE(is_row_split_candidate(weight("blocks.0.qkv.weight", {255, 4096}, 0)));
    EXPECT_FALSE(is_row_split_candidate(weight("blocks.0.qkv.weight", {4096, 255}, 0)));
    EXPECT_FALSE(is_row_split_candidate(weight("img_in.weight", {3072, 3072}, -1)));  // non-block
    EXPECT_FALSE(is_row_split_candidate(weight("blocks.0.norm.weight", {3072}, 0)));
    EXPECT_FALSE(
        is_row_split_candidate(weight("blocks.0.conv.weight", {3, 3, 320, 320}, 0, "CONV_2D")));
    EXPECT_FALSE(is_row_split_candidate(weight("blocks.0.mod", {3072, 3072, 2}, 0)));
    EXPECT_FALSE(is_row_split_candidate(weight("blocks.0.emb", {3072, 3072}, 0, "GET_ROWS")));
    TensorRecord view = weight("blocks.0.qkv.weight", {3072, 3072}, 0);
    view.contiguous = false;
    EXPECT_FALSE(is_row_split_candidate(view));
}

TEST(RowSplit, SelectsBlockMatmulsWithProportions) {
    std::vector<TensorRecord> t = {
        weight("img_in.weight", {64, 3072}, -1),
        weight("blocks.0.qkv.weight", {3072, 9216}, 0),
        weight("blocks.0.norm.weight", {3072}, 0),
        weight("blocks.1.qkv.weight", {3072, 9216}, 1),
        weight("blocks.1.small.weight", {3072, 128}, 1),
    };
    auto plan =
        plan_row_split("diffusion", t, {cuda("CUDA0", 24 * kGiB), cuda("CUDA1", 12 * kGiB)});
    ASSERT_TRUE(plan.row_split) << plan.reason;
    EXPECT_EQ(plan.fallback, RowSplitFallback::None);
    EXPECT_EQ(plan.split_tensors, (std::vector<size_t>{1, 3}));
    EXPECT_EQ(plan.split_bytes, 2u * 3072 * 9216 * 2);
    EXPECT_EQ(plan.main_bytes, 2u * (64 * 3072 + 3072 + 3072 * 128));
    ASSERT_EQ(plan.proportions.size(), 2u);
    EXPECT_NEAR(plan.proportions[0], 22.0 / 32.0, 1e-12);
    EXPECT_NEAR(plan.proportions[1], 10.0 / 32.0, 1e-12);
    EXPECT_EQ(row_split_log_line(plan),
              "diffusion row split: 2 weights (0.11 GiB) over CUDA0 0.69, CUDA1 0.31; main device "
              "CUDA0");
}

TEST(RowSplit, FallbackNoSplitBufferType) {
    DeviceInfo rpc = cuda("RPC1", 8 * kGiB);
    rpc.registry = "RPC";
    rpc.has_split_buffer = false;
    DeviceInfo rpc0 = rpc;
    rpc0.name = "RPC0";
    auto plan = plan_row_split("diffusion", {weight("blocks.0.w", {512, 512}, 0)}, {rpc0, rpc});
    EXPECT_FALSE(plan.row_split);
    EXPECT_EQ(plan.fallback, RowSplitFallback::NoSplitBufferType);
    EXPECT_EQ(row_split_log_line(plan),
              "diffusion row split is not possible: the backend of \"RPC0\" (RPC) has no split "
              "buffer type; falling back to layer split");
}

TEST(RowSplit, FallbackDifferentRegistries) {
    DeviceInfo other = cuda("Vulkan0", 8 * kGiB);
    other.registry = "Vulkan";
    auto plan = plan_row_split("te", {weight("layers.0.w", {512, 512}, 0)},
                               {cuda("CUDA0", 8 * kGiB), other});
    EXPECT_FALSE(plan.row_split);
    EXPECT_EQ(plan.fallback, RowSplitFallback::MixedRegistries);
    EXPECT_EQ(plan.reason,
              "devices \"CUDA0\" (CUDA) and \"Vulkan0\" (Vulkan) belong to different registries");
}

TEST(RowSplit, FallbackNoQualifyingWeight) {
    auto plan =
        plan_row_split("vae", {weight("decoder.conv.weight", {3, 3, 128, 128}, -1, "CONV_2D")},
                       {cuda("CUDA0", 8 * kGiB), cuda("CUDA1", 8 * kGiB)});
    EXPECT_FALSE(plan.row_split);
    EXPECT_EQ(plan.fallback, RowSplitFallback::NoQualifyingWeight);
    EXPECT_EQ(row_split_log_line(plan),
              "vae row split is not possible: no weight qualifies (block matmul weights, 2-D, "
              "contiguous, both dimensions >= 256); falling back to layer split");
}

}  // namespace
}  // namespace ggdiff::placement
