// Twins over two ggdiff-rpc workers (TESTING.md, "Twin") for the families that run FLUX.1's DiT
// on an LLM's text, on their golden sets of tests/golden: LongCat-Image (case
// longcat_edit_ref1: a reference image read by the LLM's vision tower and joining the DiT's
// sequence) and Ovis-Image (ovis_euler: SwiGLU blocks). The DiT's double and single blocks
// split by layers across RPC0 and RPC1 give the single-device image and the golden one; a
// --max-vram budget below the DiT's weights streams it in segments and gives the same image.
// The LLM fixtures (152k-token tables) stay on the CPU: shipping them to the workers would cost
// more than it tests (LLM layer splits are tested on Qwen Image Edit).
#include <gtest/gtest.h>

#include "../golden/e2e_support.h"
#include "twin_support.h"

namespace {

namespace fs = std::filesystem;
namespace e2e = ggdiff::e2e;
using e2e::contains;
using e2e::RunResult;
using namespace ggdiff::twin;

constexpr int kDitBlocks = 4;  // both tiny DiTs: 2 double + 2 single blocks

// One family's golden set and the case the twins run.
struct Family {
    const char* name;     // the test's name
    const char* display;  // the recipe's name in the log
    const char *suite, *id, *dit, *llm;
};
const Family kFamilies[] = {
    {"LongCat", "LongCat-Image", "longcat_tiny", "longcat_edit_ref1", "longcat_tiny_dit",
     "qwen_edit_tiny_llm"},
    {"Ovis", "Ovis-Image", "ovis_tiny", "ovis_euler", "ovis_tiny_dit", "zimage_tiny_llm"},
};

class LlmFluxTwin : public CaseTwin, public ::testing::WithParamInterface<Family> {
  protected:
    const Family& family() const { return GetParam(); }
    std::string suite() const override { return family().suite; }
    std::string case_id() const override { return family().id; }
    std::vector<std::string> model_files() const override {
        return {e2e::built_fixture(family().dit), e2e::built_fixture(family().llm),
                e2e::built_fixture("flux_ae")};
    }
    std::vector<std::string> model_args() const override {
        return e2e::llm_flux_args(family().dit, family().llm);
    }
    // The DiT and the VAE on RPC0.
    std::vector<std::string> single_device_placement() const override {
        return {"--backend", "all=RPC0,te=CPU"};
    }
    std::string cache_name() const override { return "llm_flux_references"; }
};

// The DiT split by layers over both workers (LongCat: with the reference latents in its
// sequence): the graph crosses the devices and the image is the one-device one.
TEST_P(LlmFluxTwin, DitLayerSplit) {
    RunResult r = twin(
        {"--backend", "all=RPC0,te=CPU,diffusion=RPC0&RPC1", "--split-mode", "diffusion=layer"},
        "DiT layer split");
    const std::string log = log_of(r);
    expect_ranges(log, "diffusion", {"RPC0", "RPC1"}, kDitBlocks, /*first_may_be_empty=*/true);
    EXPECT_GE(max_splits(log, "DiT"), 2) << "the DiT ran on one device only\n" << log;
    EXPECT_TRUE(contains(log, family().display)) << log;
}

// A --max-vram budget on RPC0 half a block short of the DiT's weights (from the dry run's
// sizes): its blocks run as streamed segments, and the image is the same.
TEST_P(LlmFluxTwin, MaxVramStreamsTheDitInSegments) {
    const nlohmann::json dit = planned_component(
        request({"--backend", "all=RPC0,te=CPU", "--auto-fit", "--fit-dry-run"}), dir_ + "/dry");
    ASSERT_TRUE(dit.contains("params_bytes")) << dit;
    // The tiny DiTs' blocks: two double blocks of about 3 MiB and two single ones of 1.5-2.5
    // MiB. A budget 1.5 MiB short of the whole streams the blocks.
    const std::string budget =
        vram_budget("RPC0", dit, dit["params_bytes"].get<double>() - 1.5 * (1 << 20));
    RunResult r =
        twin({"--backend", "all=RPC0,te=CPU,vae=CPU", "--max-vram", budget, "--stream-layers"},
             "--max-vram --stream-layers");
    const std::string log = log_of(r);
    EXPECT_TRUE(contains(log, "segments, streamed (")) << log;
    EXPECT_TRUE(split_ranges(log, "diffusion").empty()) << log;
}

INSTANTIATE_TEST_SUITE_P(Families, LlmFluxTwin, ::testing::ValuesIn(kFamilies),
                         [](const ::testing::TestParamInfo<Family>& info) {
                             return std::string(info.param.name);
                         });

}  // namespace
