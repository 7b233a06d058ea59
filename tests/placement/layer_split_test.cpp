// Layer-split partition: exact ranges for synthetic devices and models.
#include <gtest/gtest.h>

#include "placement/layer_split.h"
#include "placement/units.h"

namespace ggdiff::placement {
namespace {

TensorRecord rec(const std::string& name, uint64_t bytes, int block, const std::string& op = "") {
    TensorRecord r;
    r.name = name;
    r.bytes = bytes;
    r.block = block;
    r.op = op;
    return r;
}

DeviceInfo gpu(const std::string& name, uint64_t free_bytes) {
    DeviceInfo d;
    d.name = name;
    d.type = DeviceType::Gpu;
    d.free_bytes = free_bytes;
    d.total_bytes = free_bytes;
    d.registry = "CUDA";
    return d;
}

// `blocks` blocks of two tensors (half of `block_bytes` each) plus `nonblock` bytes in two
// tensors (embedding first, final layer last).
std::vector<TensorRecord> model(int blocks, uint64_t block_bytes, uint64_t nonblock) {
    std::vector<TensorRecord> t = {rec("x_embedder.weight", nonblock / 2, -1, "MUL_MAT")};
    for (int b = 0; b < blocks; ++b) {
        const std::string p = "blocks." + std::to_string(b) + ".";
        t.push_back(rec(p + "attn.qkv.weight", block_bytes / 2, b, "MUL_MAT"));
        t.push_back(rec(p + "mlp.fc1.weight", block_bytes - block_bytes / 2, b, "MUL_MAT"));
    }
    t.push_back(rec("final_layer.weight", nonblock - nonblock / 2, -1, "MUL_MAT"));
    return t;
}

std::vector<std::pair<int, int>> ranges_of(const LayerSplitPlan& p) {
    std::vector<std::pair<int, int>> out;
    for (const LayerRange& r : p.ranges) out.emplace_back(r.begin, r.end);
    return out;
}

TEST(LayerSplit, ThreeDevices24_12_8And60Blocks) {
    // Shares: max(free - 2, free / 8) = 22, 10, 6 GiB of 38; all bytes 32 GiB.
    // CUDA0: 22/38*32 - 2 (non-block) = 16.53 GiB -> 33 blocks of 0.5 GiB.
    // CUDA1: 10/38*32 = 8.42 GiB -> 16 blocks. CUDA2 takes the remaining 11.
    auto t = model(60, kGiB / 2, 2 * kGiB);
    auto plan = plan_layer_split(
        "diffusion", t, {gpu("CUDA0", 24 * kGiB), gpu("CUDA1", 12 * kGiB), gpu("CUDA2", 8 * kGiB)});
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    ASSERT_TRUE(plan->split);
    EXPECT_EQ(plan->num_blocks, 60);
    EXPECT_EQ(ranges_of(*plan), (std::vector<std::pair<int, int>>{{0, 33}, {33, 49}, {49, 60}}));
    EXPECT_NEAR(plan->shares[0], 22.0 / 38.0, 1e-12);
    EXPECT_NEAR(plan->shares[1], 10.0 / 38.0, 1e-12);
    EXPECT_NEAR(plan->shares[2], 6.0 / 38.0, 1e-12);
    EXPECT_EQ(plan->ranges[0].bytes, 2 * kGiB + 33 * kGiB / 2);
    EXPECT_EQ(plan->ranges[1].bytes, 16 * kGiB / 2);
    EXPECT_EQ(plan->ranges[2].bytes, 11 * kGiB / 2);
    EXPECT_EQ(plan->ranges[2].block_bytes, 11 * kGiB / 2);
    // Non-block tensors on the main device, block tensors on their range's device.
    EXPECT_EQ(plan->tensor_device.front(), 0u);
    EXPECT_EQ(plan->tensor_device.back(), 0u);
    EXPECT_EQ(plan->tensor_device[1 + 2 * 32], 0u);  // block 32
    EXPECT_EQ(plan->tensor_device[1 + 2 * 33], 1u);  // block 33
    EXPECT_EQ(plan->tensor_device[1 + 2 * 59 + 1], 2u);
    EXPECT_TRUE(plan->moves.empty());
    EXPECT_EQ(layer_split_log_lines(*plan),
              (std::vector<std::string>{"diffusion layer split: CUDA0 <- blocks [0, 33)",
                                        "diffusion layer split: CUDA1 <- blocks [33, 49)",
                                        "diffusion layer split: CUDA2 <- blocks [49, 60)"}));
}

TEST(LayerSplit, EvenDevicesSplitNearTheMiddle) {
    // 11 GiB over two equal devices: 5.5 each; the main one holds 1 GiB of non-block.
    auto t = model(10, kGiB, kGiB);
    auto plan = plan_layer_split("te", t, {gpu("RPC0", 64 * kGiB), gpu("RPC1", 64 * kGiB)});
    ASSERT_TRUE(plan.ok());
    EXPECT_EQ(ranges_of(*plan), (std::vector<std::pair<int, int>>{{0, 4}, {4, 10}}));
    EXPECT_EQ(layer_split_log_lines(*plan),
              (std::vector<std::string>{"te layer split: RPC0 <- blocks [0, 4)",
                                        "te layer split: RPC1 <- blocks [4, 10)"}));
}

TEST(LayerSplit, MainDeviceFullOfNonBlockGetsNoBlocks) {
    // Shares 2 : 22 of 13 GiB -> the main device's budget (1.08 GiB) is below its 3 GiB
    // of non-block weights, so it is closed before the first block.
    auto t = model(10, kGiB, 3 * kGiB);
    auto plan = plan_layer_split("diffusion", t, {gpu("A", 4 * kGiB), gpu("B", 24 * kGiB)});
    ASSERT_TRUE(plan.ok());
    EXPECT_EQ(ranges_of(*plan), (std::vector<std::pair<int, int>>{{0, 0}, {0, 10}}));
    EXPECT_EQ(plan->ranges[0].bytes, 3 * kGiB);
}

TEST(LayerSplit, SmallDevicesUseTheFreeOverEightFloor) {
    // free 1 GiB -> weight 1/8 GiB; free 4 GiB -> 2 GiB. 17 blocks of 1 GiB, no non-block:
    // device 0 budget 1/17 * 17 = 1 GiB -> one block; device 1 takes the rest.
    auto t = model(17, kGiB, 0);
    auto plan = plan_layer_split("diffusion", t, {gpu("A", kGiB), gpu("B", 4 * kGiB)});
    ASSERT_TRUE(plan.ok());
    EXPECT_EQ(ranges_of(*plan), (std::vector<std::pair<int, int>>{{0, 1}, {1, 17}}));
}

TEST(LayerSplit, NonMainDeviceTakesAtLeastOneBlock) {
    // A device that holds nothing yet takes the next block even above its budget.
    auto t = model(3, 4 * kGiB, 0);
    auto plan = plan_layer_split("diffusion", t,
                                 {gpu("A", 40 * kGiB), gpu("B", 3 * kGiB), gpu("C", 40 * kGiB)});
    ASSERT_TRUE(plan.ok());
    // Shares 38 : 1 : 38 of 12 GiB -> A 5.9 (one block), B 0.16 (one block), C the rest.
    EXPECT_EQ(ranges_of(*plan), (std::vector<std::pair<int, int>>{{0, 1}, {1, 2}, {2, 3}}));
}

TEST(LayerSplit, TrailingDevicesGetEmptyRanges) {
    auto t = model(4, kGiB, 0);
    auto plan = plan_layer_split("diffusion", t,
                                 {gpu("A", 80 * kGiB), gpu("B", 80 * kGiB), gpu("C", 3 * kGiB)});
    ASSERT_TRUE(plan.ok());
    // Shares 78 : 78 : 1 of 4 GiB -> A 1.99 (1 block... 2 would be 2 > 1.99), B 1.99 (1), C rest.
    EXPECT_EQ(ranges_of(*plan), (std::vector<std::pair<int, int>>{{0, 1}, {1, 2}, {2, 4}}));

    auto few = model(1, kGiB, 0);
    auto p2 = plan_layer_split("diffusion", few,
                               {gpu("A", 8 * kGiB), gpu("B", 8 * kGiB), gpu("C", 8 * kGiB)});
    ASSERT_TRUE(p2.ok());
    EXPECT_EQ(ranges_of(*p2), (std::vector<std::pair<int, int>>{{0, 1}, {1, 1}, {1, 1}}));
    EXPECT_EQ(layer_split_log_lines(*p2)[2], "diffusion layer split: C <- blocks [1, 1)");
}

TEST(LayerSplit, BlockIndexGapsStayInsideRanges) {
    std::vector<TensorRecord> t = {rec("a", kGiB, 0),  rec("b", kGiB, 1),  rec("c", kGiB, 2),
                                   rec("d", kGiB, 10), rec("e", kGiB, 11), rec("f", kGiB, 12)};
    auto plan = plan_layer_split("diffusion", t, {gpu("A", 16 * kGiB), gpu("B", 16 * kGiB)});
    ASSERT_TRUE(plan.ok());
    EXPECT_EQ(ranges_of(*plan), (std::vector<std::pair<int, int>>{{0, 10}, {10, 13}}));
}

TEST(LayerSplit, SingleDeviceTakesEverything) {
    auto t = model(5, kGiB, kGiB);
    auto plan = plan_layer_split("diffusion", t, {gpu("CUDA0", 2 * kGiB)});
    ASSERT_TRUE(plan.ok());
    EXPECT_EQ(ranges_of(*plan), (std::vector<std::pair<int, int>>{{0, 5}}));
}

TEST(LayerSplit, UnsupportedOpsMoveToTheFirstCapableDevice) {
    auto t = model(10, kGiB, kGiB);
    t.push_back(rec("blocks.8.conv.weight", 0, 8, "CONV_2D"));   // B cannot; A can
    t.push_back(rec("pos_embed.roll", 0, -1, "ROLL"));           // A cannot; B can
    t.push_back(rec("blocks.1.exotic.weight", 0, 1, "EXOTIC"));  // nobody can
    const size_t conv = t.size() - 3, roll = t.size() - 2, exotic = t.size() - 1;
    OpSupport supports = [](const TensorRecord& r, size_t device) {
        if (r.op == "EXOTIC") return false;
        if (r.op == "CONV_2D") return device == 0;
        if (r.op == "ROLL") return device == 1;
        return true;
    };
    auto plan = plan_layer_split("diffusion", t, {gpu("RPC0", 64 * kGiB), gpu("RPC1", 64 * kGiB)},
                                 supports);
    ASSERT_TRUE(plan.ok());
    EXPECT_EQ(ranges_of(*plan), (std::vector<std::pair<int, int>>{{0, 4}, {4, 10}}));
    EXPECT_EQ(plan->tensor_device[conv], 0u);
    EXPECT_EQ(plan->tensor_device[roll], 1u);
    EXPECT_EQ(plan->tensor_device[exotic], 0u);
    ASSERT_EQ(plan->moves.size(), 3u);
    EXPECT_EQ(layer_split_warnings(*plan),
              (std::vector<std::string>{
                  "diffusion: tensor \"pos_embed.roll\" (op ROLL) is not supported on \"RPC0\"; "
                  "moved to \"RPC1\"",
                  "diffusion: tensor \"blocks.8.conv.weight\" (op CONV_2D) is not supported on "
                  "\"RPC1\"; moved to \"RPC0\"",
                  "diffusion: tensor \"blocks.1.exotic.weight\" (op EXOTIC) is not supported on "
                  "any of \"RPC0\", \"RPC1\"; it stays on \"RPC0\" and the op runs on the CPU"}));
}

TEST(LayerSplit, MovedNonBlockBytesCountOnTheirDevice) {
    // 1 GiB of non-block moves to B: A's budget is 5.5, B's 5.5 - 1 = 4.5 -> A takes 5 blocks.
    std::vector<TensorRecord> t = model(10, kGiB, 0);
    t.push_back(rec("head.weight", kGiB, -1, "ROLL"));
    OpSupport supports = [](const TensorRecord& r, size_t device) {
        return r.op != "ROLL" || device == 1;
    };
    auto plan =
        plan_layer_split("diffusion", t, {gpu("A", 64 * kGiB), gpu("B", 64 * kGiB)}, supports);
    ASSERT_TRUE(plan.ok());
    EXPECT_EQ(ranges_of(*plan), (std::vector<std::pair<int, int>>{{0, 5}, {5, 10}}));
    EXPECT_EQ(plan->ranges[1].bytes, 6 * kGiB);
}

TEST(LayerSplit, NoBlocksFallsBackToFirstDevice) {
    std::vector<TensorRecord> t = {rec("encoder.conv_in.weight", kGiB, -1),
                                   rec("decoder.conv_out.weight", kGiB, -1)};
    auto plan = plan_layer_split("vae", t, {gpu("RPC0", 8 * kGiB), gpu("RPC1", 8 * kGiB)});
    ASSERT_TRUE(plan.ok());
    EXPECT_FALSE(plan->split);
    EXPECT_EQ(plan->fallback_reason, "no recognizable blocks");
    EXPECT_EQ(plan->tensor_device, (std::vector<size_t>{0, 0}));
    EXPECT_EQ(
        layer_split_log_lines(*plan),
        (std::vector<std::string>{"vae layer split: no recognizable blocks; using RPC0 only"}));
}

TEST(LayerSplit, CpuInTheListFallsBackAndSuggestsParamsBackend) {
    DeviceInfo cpu = gpu("CPU", 64 * kGiB);
    cpu.type = DeviceType::Cpu;
    auto plan = plan_layer_split("te", model(4, kGiB, 0), {gpu("CUDA0", 8 * kGiB), cpu});
    ASSERT_TRUE(plan.ok());
    EXPECT_FALSE(plan->split);
    EXPECT_EQ(layer_split_log_lines(*plan),
              (std::vector<std::string>{
                  "te layer split: CPU device \"CPU\" in the device list; to keep weights in host "
                  "memory use --params-backend te=cpu; using CUDA0 only"}));
    EXPECT_EQ(plan->tensor_device, std::vector<size_t>(10, 0));
}

TEST(LayerSplit, BadInput) {
    EXPECT_EQ(plan_layer_split("diffusion", model(2, kGiB, 0), {}).status().message(),
              "diffusion: layer split needs at least one device");
    EXPECT_EQ(plan_layer_split("diffusion", model(2, kGiB, 0), {gpu("A", kGiB), gpu("A", kGiB)})
                  .status()
                  .message(),
              "diffusion: device \"A\" listed twice");
}

}  // namespace
}  // namespace ggdiff::placement

namespace ggdiff::placement {
namespace {

TEST(LayerSplit, MeasuredHeadroomSharesBySpaceLeftAfterCompute) {
    // 10 blocks of 300 MiB over 3 GiB and 1 GiB free. With the 2 GiB default headroom the
    // shares are 1024 : 128 MiB (the small card at its free/8 floor): 2667 MiB for A -> 8
    // blocks. With 256 MiB measured headroom they are 2816 : 768: 2357 MiB for A -> 7 blocks.
    auto t = model(10, 300 * kMiB, 0);
    const std::vector<DeviceInfo> devs = {gpu("A", 3 * kGiB), gpu("B", kGiB)};
    auto standard = plan_layer_split("diffusion", t, devs);
    ASSERT_TRUE(standard.ok());
    EXPECT_EQ(ranges_of(*standard), (std::vector<std::pair<int, int>>{{0, 8}, {8, 10}}));
    auto measured = plan_layer_split("diffusion", t, devs, {}, 256 * kMiB);
    ASSERT_TRUE(measured.ok());
    EXPECT_EQ(ranges_of(*measured), (std::vector<std::pair<int, int>>{{0, 7}, {7, 10}}));
    EXPECT_EQ(split_weight(3 * kGiB, 256 * kMiB), 2816 * kMiB);
    EXPECT_EQ(split_weight(kGiB), kGiB / 8);
}

}  // namespace
}  // namespace ggdiff::placement
