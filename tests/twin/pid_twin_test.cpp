// Twins over two ggdiff-rpc workers (TESTING.md, "Twin") for PiD, on its golden set of
// tests/golden (case pid_euler: euler at cfg 1, with the reference image of -r, which goes with
// the request to each worker's part of the work): the DiT split by layers over RPC0 and RPC1
// (its 14 patch blocks and 2 pixel blocks), alone or with the Gemma LLM's 2 layers, gives the
// one-device image and the golden one.
#include <gtest/gtest.h>

#include "../golden/e2e_support.h"
#include "twin_support.h"

namespace {

namespace e2e = ggdiff::e2e;
using e2e::contains;
using e2e::RunResult;
using namespace ggdiff::twin;

constexpr const char* kSuite = "pid_tiny";
constexpr const char* kCase = "pid_euler";
constexpr int kBlocks = 16;  // 14 patch blocks + 2 pixel blocks
constexpr double kSameImage = 0.5;

// The DiT fixture is a sparse GGUF (its zero blocks are holes on disk).
std::string pid_dit() {
    return std::string(GGDIFF_BINARY_DIR) + "/fixtures/pid_tiny_dit.gguf";
}

class PidTwin : public CaseTwin {
  protected:
    std::string suite() const override { return kSuite; }
    std::string case_id() const override { return kCase; }
    double same_image_tolerance() const override { return kSameImage; }
    std::vector<std::string> model_files() const override {
        return {pid_dit(), e2e::built_fixture("pid_tiny_llm"), e2e::built_fixture("flux_ae")};
    }
    // The case's own arguments name the tokenizer (--llm-tokenizer @gemma2_tokenizer.json).
    std::vector<std::string> model_args() const override {
        const std::vector<std::string> f = model_files();
        return {"--diffusion-model", f[0], "--llm", f[1], "--vae", f[2]};
    }
    std::vector<std::string> single_device_placement() const override {
        return {"--backend", "all=RPC0"};
    }
    std::string cache_name() const override { return "pid_references"; }
};

TEST_F(PidTwin, DitLayerSplit) {
    RunResult r =
        twin({"--backend", "all=RPC0,diffusion=RPC0&RPC1", "--split-mode", "diffusion=layer"},
             "DiT layer split");
    const std::string log = log_of(r);
    expect_ranges(log, "diffusion", {"RPC0", "RPC1"}, kBlocks, /*first_may_be_empty=*/true);
    EXPECT_GE(max_splits(log, "PiD DiT"), 2) << "the DiT ran on one device only\n" << log;
}

// The DiT and the Gemma LLM split by layers together.
TEST_F(PidTwin, DitAndLlmLayerSplit) {
    RunResult r =
        twin({"--backend", "all=RPC0,diffusion=RPC0&RPC1,te=RPC0&RPC1"}, "DiT and LLM layer split");
    const std::string log = log_of(r);
    expect_ranges(log, "diffusion", {"RPC0", "RPC1"}, kBlocks, /*first_may_be_empty=*/true);
    EXPECT_TRUE(contains(log, "te layer split:")) << log;
}

}  // namespace
