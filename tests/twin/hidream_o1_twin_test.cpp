// Twins over two ggdiff-rpc workers (TESTING.md, "Twin") for HiDream-O1-Image, on the tiny
// fixture (tests/fixtures/hidream_o1_tiny.tensors): its language model, which is the DiT, split
// by layers over RPC0 and RPC1, and streamed in segments under a --max-vram budget, gives the
// one-device image. (The prompt's token embeddings are read on the host: nothing else runs
// before the DiT, and there is no VAE.) In the edit mode (-r) the file's Qwen3-VL vision tower
// reads the reference: on another device than the DiT (te=...), the image is the same.
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

constexpr int kLayers = 4;  // hidream_o1_tiny
constexpr double kSameImage = 0.5;

class HiDreamO1Twin : public CaseTwin {
  protected:
    double same_image_tolerance() const override { return kSameImage; }
    std::vector<std::string> model_files() const override {
        return {e2e::built_fixture("hidream_o1_tiny")};
    }
    std::vector<std::string> model_args() const override {
        return {"-m", model_files()[0], "--llm-tokenizer",
                e2e::shared_dir() + "/data/qwen2_synthetic"};
    }
    std::vector<std::string> case_args() const override {
        return {"-p", "a lovely cat", "-n", "blurry",  "--cfg-scale", "3",  "-W",
                "96", "-H",           "64", "--steps", "3",           "-s", "4"};
    }
    std::vector<std::string> single_device_placement() const override {
        return {"--backend", "all=RPC0"};
    }
    std::string cache_name() const override { return "hidream_o1_references"; }
};

TEST_F(HiDreamO1Twin, LanguageModelLayerSplit) {
    RunResult r =
        twin({"--backend", "all=RPC0,diffusion=RPC0&RPC1", "--split-mode", "diffusion=layer"},
             "DiT layer split");
    const std::string log = log_of(r);
    expect_ranges(log, "diffusion", {"RPC0", "RPC1"}, kLayers, /*first_may_be_empty=*/true);
    EXPECT_GE(max_splits(log, "HiDream-O1 DiT"), 2) << "the DiT ran on one device only\n" << log;
}

// A --max-vram budget on RPC0 a little short of the DiT's weights (the dry run's compute reserve
// plus the weights the DiT loads, as its log says: the plan's parameter bytes also count the
// token table, read on the host, and would leave room for everything): its layers run as
// streamed segments, and the image is the same.
TEST_F(HiDreamO1Twin, MaxVramStreamsTheDitInSegments) {
    const std::string probe_png = dir_ + "/probe.png";
    RunResult probe =
        generate({"--backend", "all=RPC0", "--steps", "1"}, probe_png, dir_ + "/probe");
    ASSERT_TRUE(probe.succeeded()) << probe.describe();
    const double weights = weight_bytes_logged(log_of(probe), "HiDream-O1 DiT");
    ASSERT_GT(weights, 0) << probe.describe();
    const nlohmann::json dit = planned_component(
        request({"--backend", "all=RPC0", "--auto-fit", "--fit-dry-run"}), dir_ + "/dry");
    ASSERT_TRUE(dit.contains("reserve_bytes")) << dit;
    // One tiny layer is about 1.1 MiB: a budget 1.2 MiB short of the whole streams them.
    const std::string budget = vram_budget("RPC0", dit, weights - 1.2 * (1 << 20));
    RunResult r = twin({"--backend", "all=RPC0", "--max-vram", budget, "--stream-layers"},
                       "--max-vram --stream-layers");
    const std::string log = log_of(r);
    EXPECT_TRUE(contains(log, "segments, streamed (")) << log;
}

// The edit mode: the vision tower (placed with the text part, te=) on RPC1 while the DiT runs
// on RPC0 gives the image of both on RPC0.
class HiDreamO1EditTwin : public HiDreamO1Twin {
  protected:
    std::vector<std::string> case_args() const override {
        return {"-p",          "make the stripes red",
                "-r",          e2e::repo_suite_dir("hidream_o1") + "/ref_stripes.png",
                "-W",          "64",
                "-H",          "64",
                "--steps",     "2",
                "--cfg-scale", "1",
                "-s",          "1"};
    }
    std::string cache_name() const override { return "hidream_o1_edit_references"; }
};

TEST_F(HiDreamO1EditTwin, VisionTowerOnAnotherDevice) {
    RunResult r = twin({"--backend", "all=RPC0,te=RPC1"}, "vision tower on RPC1");
    const std::string log = log_of(r);
    EXPECT_TRUE(contains(log, "vision: computes on RPC1")) << log;
    EXPECT_TRUE(contains(log, "HiDream-O1 DiT: computes on RPC0")) << log;
}

}  // namespace
