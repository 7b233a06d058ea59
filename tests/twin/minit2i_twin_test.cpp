// Twins over two ggdiff-rpc workers (TESTING.md, "Twin") for MiniT2I, on its golden set of
// tests/golden (case minit2i_dpmpp2m_neg: CFG, so the denoiser runs a batch of two): the DiT
// split by layers over RPC0 and RPC1 (its 2 text preamble blocks and 2 double blocks), alone or
// with T5's, and streamed in segments under a --max-vram budget, gives the one-device image and
// the golden one; a batch of two on two data-parallel replicas gives each seed's one-device
// image. There is no VAE.
#include <gtest/gtest.h>

#include <regex>

#include "../golden/e2e_support.h"
#include "twin_support.h"

namespace {

namespace fs = std::filesystem;
namespace e2e = ggdiff::e2e;
using e2e::contains;
using e2e::RunResult;
using namespace ggdiff::twin;

constexpr const char* kSuite = "minit2i_tiny";
constexpr const char* kCase = "minit2i_dpmpp2m_neg";
constexpr int kBlocks = 4;    // 2 txt_preamble_blocks + 2 double_blocks
constexpr int kT5Blocks = 2;  // flux_tiny_t5
constexpr double kSameImage = 0.5;

class MiniT2ITwin : public CaseTwin {
  protected:
    std::string suite() const override { return kSuite; }
    std::string case_id() const override { return kCase; }
    double same_image_tolerance() const override { return kSameImage; }
    std::vector<std::string> model_files() const override {
        return {e2e::built_fixture("minit2i_tiny_dit"), e2e::built_fixture("flux_tiny_t5")};
    }
    std::vector<std::string> model_args() const override {
        const std::vector<std::string> f = model_files();
        return {"--diffusion-model", f[0],
                "--t5xxl",           f[1],
                "--t5xxl-tokenizer", e2e::shared_dir() + "/data/t5_synthetic"};
    }
    std::vector<std::string> single_device_placement() const override {
        return {"--backend", "all=RPC0"};
    }
    std::string cache_name() const override { return "minit2i_references"; }
};

TEST_F(MiniT2ITwin, DitLayerSplit) {
    RunResult r =
        twin({"--backend", "all=RPC0,diffusion=RPC0&RPC1", "--split-mode", "diffusion=layer"},
             "DiT layer split");
    const std::string log = log_of(r);
    expect_ranges(log, "diffusion", {"RPC0", "RPC1"}, kBlocks, /*first_may_be_empty=*/true);
    EXPECT_GE(max_splits(log, "MiniT2I DiT"), 2) << "the DiT ran on one device only\n" << log;
}

// The DiT and T5 split by layers together: both graphs cross the devices and the image is the
// one-device one (T5's token table, a non-block weight, may fill RPC0's share by itself).
TEST_F(MiniT2ITwin, DitAndT5LayerSplit) {
    RunResult r =
        twin({"--backend", "all=RPC0,diffusion=RPC0&RPC1,te=RPC0&RPC1"}, "DiT and T5 layer split");
    const std::string log = log_of(r);
    expect_ranges(log, "diffusion", {"RPC0", "RPC1"}, kBlocks, /*first_may_be_empty=*/true);
    expect_ranges(log, "te", {"RPC0", "RPC1"}, kT5Blocks, /*first_may_be_empty=*/true);
    EXPECT_GE(max_splits(log, "T5"), 2) << "T5 ran on one device only\n" << log;
}

// A batch of two on two replicas: item 0 on RPC0 is the single-device image, item 1 on RPC1 the
// single-device image of the next seed.
TEST_F(MiniT2ITwin, BatchOnTwoDataParallelReplicas) {
    const std::string out = dir_ + "/dp.png";
    RunResult r = generate({"-b", "2", "--backend", "all=RPC0|RPC1"}, out, dir_);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    EXPECT_TRUE(contains(log_of(r), "data parallel: 2 replicas (RPC0, RPC1)")) << log_of(r);
    expect_same_image(r, out, single_device(), kSameImage, "data parallel item 0");
    const std::string next = dir_ + "/next_seed.png";
    RunResult s = generate({"--backend", "CPU", "-s", "8"}, next, dir_ + "/reference");
    ASSERT_TRUE(s.succeeded()) << s.describe();
    expect_same_image(r, batch_name(out, 1), next, kSameImage, "data parallel item 1");
    EXPECT_GT(e2e::compare_images(out, batch_name(out, 1)).mean_abs, 3.0)
        << "both replicas made the same image";
}

// A --max-vram budget on RPC0 a little short of the DiT's weights (the dry run's compute reserve
// plus the weights the DiT loads, as its log says): its blocks run as streamed segments, and the
// image is the same. T5 runs on the CPU here (its 32128-row token table alone is larger than
// the budget).
TEST_F(MiniT2ITwin, MaxVramStreamsTheDitInSegments) {
    const std::string probe_png = dir_ + "/probe.png";
    RunResult probe =
        generate({"--backend", "all=RPC0", "--steps", "1"}, probe_png, dir_ + "/probe");
    ASSERT_TRUE(probe.succeeded()) << probe.describe();
    const double weights = weight_bytes_logged(log_of(probe), "MiniT2I DiT");
    ASSERT_GT(weights, 0) << probe.describe();
    const nlohmann::json dit = planned_component(
        request({"--backend", "all=RPC0", "--auto-fit", "--fit-dry-run"}), dir_ + "/dry");
    ASSERT_TRUE(dit.contains("reserve_bytes")) << dit;
    // One double block of the fixture is about 1.3 MiB in f32 (the case's --type f32): a budget
    // 0.5 MiB short of the whole streams them.
    const std::string budget = vram_budget("RPC0", dit, weights - 0.5 * (1 << 20));
    RunResult r = twin({"--backend", "all=RPC0,te=CPU", "--max-vram", budget, "--stream-layers"},
                       "--max-vram --stream-layers");
    const std::string log = log_of(r);
    EXPECT_TRUE(contains(log, "segments, streamed (")) << log;
}

}  // namespace
