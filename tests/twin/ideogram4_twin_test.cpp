// Twins over two ggdiff-rpc workers (TESTING.md, "Twin") for Ideogram 4, on its golden set of
// tests/golden (case ideogram4_uncond: cfg 4 with the unconditional DiT): the LLM (36 layers 4096
// wide) split by layers over RPC0 and RPC1, together with both DiTs (each its one layer on RPC1,
// the text projection and embedders on RPC0), gives the one-device image and the golden one; a
// batch of two on two data-parallel replicas gives each seed's one-device image.
#include <gtest/gtest.h>

#include "../golden/e2e_support.h"
#include "twin_support.h"

namespace {

namespace e2e = ggdiff::e2e;
using e2e::contains;
using e2e::RunResult;
using namespace ggdiff::twin;

constexpr const char* kSuite = "ideogram4_tiny";
constexpr const char* kCase = "ideogram4_uncond";
constexpr int kBlocks = 1;      // layers.0
constexpr int kLlmBlocks = 36;  // every layer: the last state read is the output of layer 36
constexpr double kSameImage = 0.5;

std::string gguf(const std::string& stem) {
    return std::string(GGDIFF_BINARY_DIR) + "/fixtures/" + stem + ".gguf";
}

class Ideogram4Twin : public CaseTwin {
  protected:
    std::string suite() const override { return kSuite; }
    std::string case_id() const override { return kCase; }
    double same_image_tolerance() const override { return kSameImage; }
    std::vector<std::string> model_files() const override {
        return {gguf("ideogram4_tiny_dit"), gguf("ideogram4_tiny_uncond"),
                gguf("ideogram4_tiny_llm"), e2e::built_fixture("flux2_vae")};
    }
    std::vector<std::string> model_args() const override {
        const std::vector<std::string> f = model_files();
        return {"--diffusion-model",
                f[0],
                "--uncond-diffusion-model",
                f[1],
                "--llm",
                f[2],
                "--vae",
                f[3],
                "--llm-tokenizer",
                e2e::shared_dir() + "/data/qwen2_synthetic"};
    }
    std::vector<std::string> single_device_placement() const override {
        return {"--backend", "all=RPC0"};
    }
    std::string cache_name() const override { return "ideogram4_references"; }
};

// The DiT and the LLM split by layers together: the LLM's graph crosses the devices.
TEST_F(Ideogram4Twin, DitAndLlmLayerSplit) {
    RunResult r =
        twin({"--backend", "all=RPC0,diffusion=RPC0&RPC1,te=RPC0&RPC1"}, "DiT and LLM layer split");
    const std::string log = log_of(r);
    // Two DiTs, each split on its own: the text projection and embedders (the non-block
    // weights) fill RPC0's share, the one layer goes to RPC1.
    const std::vector<Range> dit = split_ranges(log, "diffusion");
    ASSERT_EQ(dit.size(), 4u) << describe(dit) << "\n" << log;
    for (size_t i = 0; i < dit.size(); ++i) {
        EXPECT_EQ(dit[i].device, i % 2 ? "RPC1" : "RPC0") << describe(dit);
        EXPECT_EQ(dit[i].end, i % 2 ? kBlocks : 0) << describe(dit);
    }
    expect_ranges(log, "te", {"RPC0", "RPC1"}, kLlmBlocks);
    EXPECT_GE(max_splits(log, "LLM"), 2) << "the LLM ran on one device only\n" << log;
    EXPECT_GE(max_splits(log, "Ideogram 4 DiT"), 2) << "the DiT ran on one device only\n" << log;
}

// A batch of two on two replicas: item 0 on RPC0 is the single-device image, item 1 on RPC1 the
// single-device image of the next seed.
TEST_F(Ideogram4Twin, BatchOnTwoDataParallelReplicas) {
    const std::string out = dir_ + "/dp.png";
    RunResult r = generate({"-b", "2", "--backend", "all=RPC0|RPC1"}, out, dir_);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    EXPECT_TRUE(contains(log_of(r), "data parallel: 2 replicas (RPC0, RPC1)")) << log_of(r);
    expect_same_image(r, out, single_device(), kSameImage, "data parallel item 0");
    const std::string next = dir_ + "/next_seed.png";
    RunResult s = generate({"--backend", "all=RPC0", "-s", "43"}, next, dir_ + "/reference");
    ASSERT_TRUE(s.succeeded()) << s.describe();
    expect_same_image(r, batch_name(out, 1), next, kSameImage, "data parallel item 1");
    EXPECT_GT(e2e::compare_images(out, batch_name(out, 1)).mean_abs, 3.0)
        << "both replicas made the same image";
}

}  // namespace
