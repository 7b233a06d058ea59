// Twins over two ggdiff-rpc workers (TESTING.md, "Twin") for Krea2, on its golden set of
// tests/golden (case krea2_dpmpp2m_neg: CFG with a negative prompt): the DiT split by layers
// over RPC0 and RPC1 (its 4 text fusion and 2 single-stream blocks), alone or with the LLM's
// layers, and streamed in segments under a --max-vram budget, gives the one-device image and
// the golden one; a batch of two on two data-parallel replicas gives each seed's one-device
// image.
#include <gtest/gtest.h>

#include "../golden/e2e_support.h"
#include "twin_support.h"

namespace {

namespace e2e = ggdiff::e2e;
using e2e::contains;
using e2e::RunResult;
using namespace ggdiff::twin;

constexpr const char* kSuite = "krea2_tiny";
constexpr const char* kCase = "krea2_dpmpp2m_neg";
constexpr int kBlocks = 6;      // 2 layerwise + 2 refiner text fusion blocks, 2 blocks.N
constexpr int kLlmBlocks = 11;  // of krea2_tiny_llm's 12 layers, those up to the last state read
constexpr double kSameImage = 0.5;

class Krea2Twin : public CaseTwin {
  protected:
    std::string suite() const override { return kSuite; }
    std::string case_id() const override { return kCase; }
    double same_image_tolerance() const override { return kSameImage; }
    std::vector<std::string> model_files() const override {
        return {e2e::built_fixture("krea2_tiny_dit"), e2e::built_fixture("krea2_tiny_llm"),
                e2e::built_fixture("qwen_vae")};
    }
    std::vector<std::string> model_args() const override {
        const std::vector<std::string> f = model_files();
        return {"--diffusion-model",
                f[0],
                "--llm",
                f[1],
                "--vae",
                f[2],
                "--llm-tokenizer",
                e2e::shared_dir() + "/data/qwen2_synthetic"};
    }
    std::vector<std::string> single_device_placement() const override {
        return {"--backend", "all=RPC0"};
    }
    std::string cache_name() const override { return "krea2_references"; }
};

TEST_F(Krea2Twin, DitLayerSplit) {
    RunResult r =
        twin({"--backend", "all=RPC0,diffusion=RPC0&RPC1", "--split-mode", "diffusion=layer"},
             "DiT layer split");
    const std::string log = log_of(r);
    expect_ranges(log, "diffusion", {"RPC0", "RPC1"}, kBlocks, /*first_may_be_empty=*/true);
    EXPECT_GE(max_splits(log, "Krea2 DiT"), 2) << "the DiT ran on one device only\n" << log;
}

// The DiT and the LLM split by layers together: both graphs cross the devices.
TEST_F(Krea2Twin, DitAndLlmLayerSplit) {
    RunResult r =
        twin({"--backend", "all=RPC0,diffusion=RPC0&RPC1,te=RPC0&RPC1"}, "DiT and LLM layer split");
    const std::string log = log_of(r);
    expect_ranges(log, "diffusion", {"RPC0", "RPC1"}, kBlocks, /*first_may_be_empty=*/true);
    expect_ranges(log, "te", {"RPC0", "RPC1"}, kLlmBlocks, /*first_may_be_empty=*/true);
    EXPECT_GE(max_splits(log, "LLM"), 2) << "the LLM ran on one device only\n" << log;
}

// A batch of two on two replicas: item 0 on RPC0 is the single-device image, item 1 on RPC1 the
// single-device image of the next seed.
TEST_F(Krea2Twin, BatchOnTwoDataParallelReplicas) {
    const std::string out = dir_ + "/dp.png";
    RunResult r = generate({"-b", "2", "--backend", "all=RPC0|RPC1"}, out, dir_);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    EXPECT_TRUE(contains(log_of(r), "data parallel: 2 replicas (RPC0, RPC1)")) << log_of(r);
    expect_same_image(r, out, single_device(), kSameImage, "data parallel item 0");
    const std::string next = dir_ + "/next_seed.png";
    RunResult s = generate({"--backend", "all=RPC0", "-s", "8"}, next, dir_ + "/reference");
    ASSERT_TRUE(s.succeeded()) << s.describe();
    expect_same_image(r, batch_name(out, 1), next, kSameImage, "data parallel item 1");
    EXPECT_GT(e2e::compare_images(out, batch_name(out, 1)).mean_abs, 3.0)
        << "both replicas made the same image";
}

// A --max-vram budget on RPC0 a little short of the DiT's weights (the dry run's compute reserve
// plus the weights the DiT loads, as its log says): its blocks run as streamed segments, and the
// image is the same. The LLM and the VAE run on the CPU here (each is larger than the budget).
TEST_F(Krea2Twin, MaxVramStreamsTheDitInSegments) {
    const std::string probe_png = dir_ + "/probe.png";
    RunResult probe =
        generate({"--backend", "all=RPC0", "--steps", "1"}, probe_png, dir_ + "/probe");
    ASSERT_TRUE(probe.succeeded()) << probe.describe();
    const double weights = weight_bytes_logged(log_of(probe), "Krea2 DiT");
    ASSERT_GT(weights, 0) << probe.describe();
    const nlohmann::json dit = planned_component(
        request({"--backend", "all=RPC0", "--auto-fit", "--fit-dry-run"}), dir_ + "/dry");
    ASSERT_TRUE(dit.contains("reserve_bytes")) << dit;
    // The fixture's blocks are 1.6 MiB (single-stream) to 2.6 MiB (text fusion) in f16: a budget
    // 0.5 MiB short of the whole streams them.
    const std::string budget = vram_budget("RPC0", dit, weights - 0.5 * (1 << 20));
    RunResult r =
        twin({"--backend", "all=RPC0,te=CPU,vae=CPU", "--max-vram", budget, "--stream-layers"},
             "--max-vram --stream-layers");
    EXPECT_TRUE(contains(log_of(r), "segments, streamed (")) << log_of(r);
}

}  // namespace
