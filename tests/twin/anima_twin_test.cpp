// Twins over two ggdiff-rpc workers (TESTING.md, "Twin") for Anima, on its golden set of
// tests/golden (case anima_euler): the DiT split by layers across RPC0 and RPC1 (the fixture's
// one block on RPC1, the patch / timestep embedders and the final layer on RPC0) gives the
// single-device image and the golden one; a --max-vram budget streams the LLM adapter (which
// runs on the DiT's first device) in segments and gives the same image. The Qwen3 fixture (a
// 152k-token table) stays on the CPU.
#include <gtest/gtest.h>

#include "../golden/e2e_support.h"
#include "twin_support.h"

namespace {

namespace fs = std::filesystem;
namespace e2e = ggdiff::e2e;
using e2e::contains;
using e2e::RunResult;
using namespace ggdiff::twin;

constexpr const char* kSuite = "anima_tiny";
constexpr const char* kCase = "anima_euler";

class AnimaTwin : public CaseTwin {
  protected:
    std::string suite() const override { return kSuite; }
    std::string case_id() const override { return kCase; }
    std::vector<std::string> model_files() const override {
        return {e2e::built_fixture("anima_tiny_dit"), e2e::built_fixture("anima_tiny_llm"),
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
                e2e::shared_dir() + "/data/qwen2_synthetic",
                "--t5xxl-tokenizer",
                e2e::shared_dir() + "/data/t5_synthetic"};
    }
    // The DiT on RPC0, the text encoder and VAE on the CPU.
    std::vector<std::string> single_device_placement() const override {
        return {"--backend", "all=CPU,diffusion=RPC0"};
    }
    std::string cache_name() const override { return "anima_references"; }
};

// The DiT split by layers over both workers: the graph crosses the devices and the image is
// the one-device one.
TEST_F(AnimaTwin, DitLayerSplit) {
    RunResult r =
        twin({"--backend", "all=CPU,diffusion=RPC0&RPC1", "--split-mode", "diffusion=layer"},
             "DiT layer split");
    const std::string log = log_of(r);
    expect_ranges(log, "diffusion", {"RPC0", "RPC1"}, 1, /*first_may_be_empty=*/true);
    EXPECT_GE(max_splits(log, "DiT"), 2) << "the DiT ran on one device only\n" << log;
    EXPECT_TRUE(contains(log, "Anima: DiT 2048 wide, 1 blocks")) << log;
}

// A --max-vram budget on RPC0 of half the diffusion weights (from the dry run's sizes): the
// LLM adapter (6 blocks of 32 MiB and a 63 MiB T5 table in the fixture, more than half) runs
// in streamed segments, the DiT (its one block of 132 MiB, less than half) whole after it, and
// the image is the same. The fixture's DiT has one block at the real width: nothing smaller
// than the whole DiT could hold its segments, so its own streaming is not tried here.
TEST_F(AnimaTwin, MaxVramStreamsTheAdapterInSegments) {
    const nlohmann::json dit = planned_component(
        request({"--backend", "all=CPU,diffusion=RPC0", "--auto-fit", "--fit-dry-run"}),
        dir_ + "/dry");
    ASSERT_TRUE(dit.contains("params_bytes")) << dit;
    const std::string budget = vram_budget("RPC0", dit, 0.5 * dit["params_bytes"].get<double>());
    RunResult r =
        twin({"--backend", "all=CPU,diffusion=RPC0", "--max-vram", budget, "--stream-layers"},
             "--max-vram --stream-layers");
    const std::string log = log_of(r);
    EXPECT_TRUE(contains(log, "segments, streamed (")) << log;
    EXPECT_TRUE(contains(log, "of weights fit the")) << "the DiT did not run whole\n" << log;
    EXPECT_TRUE(split_ranges(log, "diffusion").empty()) << log;
}

}  // namespace
