// Twins over two ggdiff-rpc workers (TESTING.md, "Twin") for Boogu Image, on its golden set of
// tests/golden (case boogu_edit: CFG with a reference latent, so every block kind runs, the
// reference-image refiner included): the DiT split by layers over RPC0 and RPC1 (its context,
// noise and reference refiners, double-stream and 2 single-stream layers), alone or with the
// LLM's, and streamed in segments under a --max-vram budget, gives the one-device image and the
// golden one; a batch of two on two data-parallel replicas gives each seed's one-device image.
#include <gtest/gtest.h>

#include "../golden/e2e_support.h"
#include "twin_support.h"

namespace {

namespace e2e = ggdiff::e2e;
using e2e::contains;
using e2e::RunResult;
using namespace ggdiff::twin;

constexpr const char* kSuite = "boogu_tiny";
constexpr const char* kCase = "boogu_edit";
constexpr int kBlocks = 6;  // 3 refiners + 1 double-stream + 2 single-stream layers
constexpr double kSameImage = 0.5;

class BooguTwin : public CaseTwin {
  protected:
    std::string suite() const override { return kSuite; }
    std::string case_id() const override { return kCase; }
    double same_image_tolerance() const override { return kSameImage; }
    std::vector<std::string> model_files() const override {
        return {e2e::built_fixture("boogu_tiny_dit"), e2e::built_fixture("zimage_tiny_llm"),
                e2e::built_fixture("flux_ae")};
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
    std::string cache_name() const override { return "boogu_references"; }
};

TEST_F(BooguTwin, DitLayerSplit) {
    RunResult r =
        twin({"--backend", "all=RPC0,diffusion=RPC0&RPC1", "--split-mode", "diffusion=layer"},
             "DiT layer split");
    const std::string log = log_of(r);
    expect_ranges(log, "diffusion", {"RPC0", "RPC1"}, kBlocks, /*first_may_be_empty=*/true);
    EXPECT_GE(max_splits(log, "Boogu DiT"), 2) << "the DiT ran on one device only\n" << log;
}

// The DiT and the LLM split by layers together (the LLM's one layer goes to one device: its
// token table, a non-block weight, fills RPC0's share).
TEST_F(BooguTwin, DitAndLlmLayerSplit) {
    RunResult r =
        twin({"--backend", "all=RPC0,diffusion=RPC0&RPC1,te=RPC0&RPC1"}, "DiT and LLM layer split");
    const std::string log = log_of(r);
    expect_ranges(log, "diffusion", {"RPC0", "RPC1"}, kBlocks, /*first_may_be_empty=*/true);
    EXPECT_TRUE(contains(log, "te layer split:")) << log;
}

// A batch of two on two replicas gives the images of the same batch on one device: item 0 the
// single-device image, item 1 that of the next seed (with the first seed's reference latent:
// the request encodes its references once, as the reference engine does).
TEST_F(BooguTwin, BatchOnTwoDataParallelReplicas) {
    const std::string out = dir_ + "/dp.png";
    RunResult r = generate({"-b", "2", "--backend", "all=RPC0|RPC1"}, out, dir_);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    EXPECT_TRUE(contains(log_of(r), "data parallel: 2 replicas (RPC0, RPC1)")) << log_of(r);
    expect_same_image(r, out, single_device(), kSameImage, "data parallel item 0");
    const std::string one = dir_ + "/one_device.png";
    RunResult s = generate({"-b", "2", "--backend", "CPU"}, one, dir_ + "/reference");
    ASSERT_TRUE(s.succeeded()) << s.describe();
    expect_same_image(r, batch_name(out, 1), batch_name(one, 1), kSameImage,
                      "data parallel item 1");
    EXPECT_GT(e2e::compare_images(out, batch_name(out, 1)).mean_abs, 3.0)
        << "both replicas made the same image";
}

// A --max-vram budget on RPC0 a little short of the DiT's weights (the dry run's compute reserve
// plus the weights the DiT loads, as its log says): its blocks run as streamed segments, and the
// image is the same. The LLM and the VAE run on the CPU here (each alone is larger than the
// budget).
TEST_F(BooguTwin, MaxVramStreamsTheDitInSegments) {
    const std::string probe_png = dir_ + "/probe.png";
    RunResult probe =
        generate({"--backend", "all=RPC0", "--steps", "1"}, probe_png, dir_ + "/probe");
    ASSERT_TRUE(probe.succeeded()) << probe.describe();
    const double weights = weight_bytes_logged(log_of(probe), "Boogu DiT");
    ASSERT_GT(weights, 0) << probe.describe();
    const nlohmann::json dit = planned_component(
        request({"--backend", "all=RPC0", "--auto-fit", "--fit-dry-run"}), dir_ + "/dry");
    ASSERT_TRUE(dit.contains("reserve_bytes")) << dit;
    // One single-stream layer of the fixture is about 0.4 MiB in f16: a budget 0.5 MiB short of
    // the whole streams them.
    const std::string budget = vram_budget("RPC0", dit, weights - 0.5 * (1 << 20));
    RunResult r =
        twin({"--backend", "all=RPC0,te=CPU,vae=CPU", "--max-vram", budget, "--stream-layers"},
             "--max-vram --stream-layers");
    const std::string log = log_of(r);
    EXPECT_TRUE(contains(log, "segments, streamed (")) << log;
}

}  // namespace
