// Twins over two ggdiff-rpc workers (TESTING.md, "Twin") for SeFi-Image, on its golden set of
// tests/golden (case sefi_cfg_neg: CFG, so the DiT runs a batch of two at one timestep pair):
// the DiT split by layers over RPC0 and RPC1 (2 double and 2 single blocks), alone or with the
// LLM's 27 layers, and streamed in segments under a --max-vram budget, gives the one-device image
// and the golden one; a batch of two on two data-parallel replicas gives each seed's one-device
// image (each replica's sampler tells its own DiT the timesteps).
#include <gtest/gtest.h>

#include "../golden/e2e_support.h"
#include "twin_support.h"

namespace {

namespace e2e = ggdiff::e2e;
using e2e::contains;
using e2e::RunResult;
using namespace ggdiff::twin;

constexpr const char* kSuite = "sefi_tiny";
constexpr const char* kCase = "sefi_cfg_neg";
constexpr int kBlocks = 4;      // 2 double_blocks + 2 single_blocks
constexpr int kLlmBlocks = 27;  // flux2_tiny_llm
constexpr double kSameImage = 0.5;

class SefiTwin : public CaseTwin {
  protected:
    std::string suite() const override { return kSuite; }
    std::string case_id() const override { return kCase; }
    double same_image_tolerance() const override { return kSameImage; }
    std::vector<std::string> model_files() const override {
        return {e2e::built_fixture("sefi_tiny_dit"), e2e::built_fixture("flux2_tiny_llm"),
                e2e::built_fixture("flux2_vae")};
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
    std::string cache_name() const override { return "sefi_references"; }
};

TEST_F(SefiTwin, DitLayerSplit) {
    RunResult r =
        twin({"--backend", "all=RPC0,diffusion=RPC0&RPC1", "--split-mode", "diffusion=layer"},
             "DiT layer split");
    const std::string log = log_of(r);
    expect_ranges(log, "diffusion", {"RPC0", "RPC1"}, kBlocks, /*first_may_be_empty=*/true);
    EXPECT_GE(max_splits(log, "FLUX.2 DiT"), 2) << "the DiT ran on one device only\n" << log;
}

TEST_F(SefiTwin, DitAndLlmLayerSplit) {
    RunResult r =
        twin({"--backend", "all=RPC0,diffusion=RPC0&RPC1,te=RPC0&RPC1"}, "DiT and LLM layer split");
    const std::string log = log_of(r);
    expect_ranges(log, "diffusion", {"RPC0", "RPC1"}, kBlocks, /*first_may_be_empty=*/true);
    expect_ranges(log, "te", {"RPC0", "RPC1"}, kLlmBlocks, /*first_may_be_empty=*/true);
}

TEST_F(SefiTwin, BatchOnTwoDataParallelReplicas) {
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

// A --max-vram budget on RPC0 a little short of the DiT's weights: its blocks run as streamed
// segments, and the image is the same. The LLM and the VAE run on the CPU.
TEST_F(SefiTwin, MaxVramStreamsTheDitInSegments) {
    const std::string probe_png = dir_ + "/probe.png";
    RunResult probe =
        generate({"--backend", "all=RPC0", "--steps", "1"}, probe_png, dir_ + "/probe");
    ASSERT_TRUE(probe.succeeded()) << probe.describe();
    const double weights = weight_bytes_logged(log_of(probe), "FLUX.2 DiT");
    ASSERT_GT(weights, 0) << probe.describe();
    const nlohmann::json dit = planned_component(
        request({"--backend", "all=RPC0", "--auto-fit", "--fit-dry-run"}), dir_ + "/dry");
    ASSERT_TRUE(dit.contains("reserve_bytes")) << dit;
    // A single block of the fixture is about 1.3 MiB in f16: 1 MiB short streams them.
    const std::string budget = vram_budget("RPC0", dit, weights - 1.0 * (1 << 20));
    RunResult r =
        twin({"--backend", "all=RPC0,te=CPU,vae=CPU", "--max-vram", budget, "--stream-layers"},
             "--max-vram --stream-layers");
    EXPECT_TRUE(contains(log_of(r), "segments, streamed (")) << log_of(r);
}

}  // namespace
