// Twins over two ggdiff-rpc workers (TESTING.md, "Twin") for ERNIE-Image on its golden set of
// tests/golden (case ernie_euler: real CFG with the single-<s> negative). The DiT's layers and
// the Ministral text encoder's layers split across RPC0 and RPC1 give the single-device image
// and the golden one; a --max-vram budget below the DiT's weights runs its layers in
// segments uploaded in turn and gives the same image.
#include <gtest/gtest.h>

#include "../golden/e2e_support.h"
#include "twin_support.h"

namespace {

namespace fs = std::filesystem;
namespace e2e = ggdiff::e2e;
using e2e::contains;
using e2e::RunResult;
using namespace ggdiff::twin;

constexpr const char* kCase = "ernie_euler";
constexpr int kDitLayers = 2;   // ernie_tiny_dit
constexpr int kLlmLayers = 25;  // ernie_tiny_llm: the layers up to the one ERNIE-Image reads

class ErnieTwin : public CaseTwin {
  protected:
    std::string suite() const override { return "ernie_tiny"; }
    std::string case_id() const override { return kCase; }
    std::vector<std::string> model_files() const override {
        return {e2e::built_fixture("ernie_tiny_dit"), e2e::built_fixture("ernie_tiny_llm"),
                e2e::built_fixture("flux2_vae")};
    }
    std::vector<std::string> model_args() const override {
        const std::vector<std::string> f = model_files();
        return {"--diffusion-model", f[0], "--llm", f[1], "--vae", f[2]};
    }
    // The DiT and the LLM on RPC0, the VAE on the CPU.
    std::vector<std::string> single_device_placement() const override {
        return {"--backend", "all=RPC0,vae=CPU"};
    }
    std::string cache_name() const override { return "ernie_references"; }
};

// The DiT and the text encoder each split by layers over both workers: both graphs cross the
// devices and the image is the one-device one.
TEST_F(ErnieTwin, DitAndLlmLayerSplit) {
    RunResult r = twin({"--backend", "all=RPC0,vae=CPU,diffusion=RPC0&RPC1,te=RPC0&RPC1",
                        "--split-mode", "diffusion=layer,te=layer"},
                       "DiT and LLM layer split");
    const std::string log = log_of(r);
    expect_ranges(log, "diffusion", {"RPC0", "RPC1"}, kDitLayers, /*first_may_be_empty=*/true);
    expect_ranges(log, "te", {"RPC0", "RPC1"}, kLlmLayers, /*first_may_be_empty=*/true);
    EXPECT_GE(max_splits(log, "DiT"), 2) << "the DiT ran on one device only\n" << log;
    EXPECT_GE(max_splits(log, "LLM"), 2) << "the LLM ran on one device only\n" << log;
    EXPECT_TRUE(contains(log, "ERNIE-Image")) << log;
}

// A --max-vram budget on RPC0 below the DiT's weights (from the dry run's sizes): its layers
// run as segments uploaded in turn, and the image is the same. (--stream-layers, which keeps
// two segments resident, needs more than this two-layer DiT's budget allows.)
TEST_F(ErnieTwin, MaxVramCutsTheDitInSegments) {
    const nlohmann::json dit = planned_component(
        request({"--backend", "all=RPC0,te=CPU", "--auto-fit", "--fit-dry-run"}), dir_ + "/dry");
    ASSERT_TRUE(dit.contains("params_bytes")) << dit;
    // The tiny DiT: two layers of 1.3 MiB and 1.4 MiB of embedders and final layers; a budget
    // 1 MiB short of the whole holds one layer at a time.
    const std::string budget =
        vram_budget("RPC0", dit, dit["params_bytes"].get<double>() - (1 << 20));
    RunResult r =
        twin({"--backend", "all=RPC0,te=CPU,vae=CPU", "--max-vram", budget}, "--max-vram cutting");
    const std::string log = log_of(r);
    EXPECT_TRUE(contains(log, "diffusion: 2 segments, cut (")) << log;
    EXPECT_TRUE(split_ranges(log, "diffusion").empty()) << log;
}

}  // namespace
