// Twins over two ggdiff-rpc workers (TESTING.md, "Twin") for Lens, on its golden set of
// tests/golden (case lens_dpmpp2m_neg: CFG with a negative prompt at 96x64): the DiT split by
// layers over RPC0 and RPC1 (its 2 blocks), alone or with the GPT-OSS LLM's 24 layers, and
// cut in segments under a --max-vram budget, gives the one-device image and the golden one.
#include <gtest/gtest.h>

#include "../golden/e2e_support.h"
#include "twin_support.h"

namespace {

namespace e2e = ggdiff::e2e;
using e2e::contains;
using e2e::RunResult;
using namespace ggdiff::twin;

constexpr const char* kSuite = "lens_tiny";
constexpr const char* kCase = "lens_dpmpp2m_neg";
constexpr int kBlocks = 2;      // the DiT's 2 blocks
constexpr int kLlmBlocks = 24;  // GPT-OSS's 24 layers (the states after 6, 12, 18, 24 are read)
constexpr double kSameImage = 0.5;

class LensTwin : public CaseTwin {
  protected:
    std::string suite() const override { return kSuite; }
    std::string case_id() const override { return kCase; }
    double same_image_tolerance() const override { return kSameImage; }
    std::vector<std::string> model_files() const override {
        return {e2e::built_fixture("lens_tiny_dit"),
                std::string(GGDIFF_BINARY_DIR) + "/fixtures/lens_tiny_llm.gguf",
                e2e::built_fixture("flux2_vae")};
    }
    // The case's arguments pass the synthetic GPT-OSS tokenizer (--llm-tokenizer).
    std::vector<std::string> model_args() const override {
        const std::vector<std::string> f = model_files();
        return {"--diffusion-model", f[0], "--llm", f[1], "--vae", f[2]};
    }
    std::vector<std::string> single_device_placement() const override {
        return {"--backend", "all=RPC0"};
    }
    std::string cache_name() const override { return "lens_references"; }
};

TEST_F(LensTwin, DitLayerSplit) {
    RunResult r =
        twin({"--backend", "all=RPC0,diffusion=RPC0&RPC1", "--split-mode", "diffusion=layer"},
             "DiT layer split");
    const std::string log = log_of(r);
    expect_ranges(log, "diffusion", {"RPC0", "RPC1"}, kBlocks, /*first_may_be_empty=*/true);
    EXPECT_GE(max_splits(log, "DiT"), 2) << "the DiT ran on one device only\n" << log;
}

// The DiT and the LLM split by layers together: both graphs cross the devices.
TEST_F(LensTwin, DitAndLlmLayerSplit) {
    RunResult r =
        twin({"--backend", "all=RPC0,diffusion=RPC0&RPC1,te=RPC0&RPC1"}, "DiT and LLM layer split");
    const std::string log = log_of(r);
    expect_ranges(log, "diffusion", {"RPC0", "RPC1"}, kBlocks, /*first_may_be_empty=*/true);
    expect_ranges(log, "te", {"RPC0", "RPC1"}, kLlmBlocks, /*first_may_be_empty=*/true);
    EXPECT_GE(max_splits(log, "LLM"), 2) << "the LLM ran on one device only\n" << log;
}

// A --max-vram budget on RPC0 below the DiT's weights (from the dry run's sizes): its blocks
// run as segments uploaded in turn, and the image is that of the same placement without a
// budget (the LLM and the VAE on the CPU: the in-process CPU LLM's image is 0.93 from the
// one-device image on RPC0, whose worker computes the LLM with other kernels) and the golden one.
// (--stream-layers, which keeps two segments resident, needs more than this two-block DiT's
// budget allows: with 1.1 MiB blocks and 3.1 MiB of embedders and final layers, two segments
// are the whole DiT.)
TEST_F(LensTwin, MaxVramCutsTheDitInSegments) {
    const std::vector<std::string> placement = {"--backend", "all=RPC0,te=CPU,vae=CPU"};
    const nlohmann::json dit = planned_component(
        request({"--backend", "all=RPC0,te=CPU", "--auto-fit", "--fit-dry-run"}), dir_ + "/dry");
    ASSERT_TRUE(dit.contains("params_bytes")) << dit;
    const std::string whole = dir_ + "/whole.png";
    RunResult w = generate(placement, whole, dir_ + "/whole");
    ASSERT_TRUE(w.succeeded()) << w.describe();
    // A budget 0.5 MiB short of the whole holds one block at a time.
    const std::string budget =
        vram_budget("RPC0", dit, dit["params_bytes"].get<double>() - 0.5 * (1 << 20));
    std::vector<std::string> extra = placement;
    extra.insert(extra.end(), {"--max-vram", budget});
    const std::string out = dir_ + "/cut.png";
    RunResult r = generate(extra, out, dir_);
    expect_same_image(r, out, whole, kSameImage, "--max-vram cutting");
    e2e::expect_images_near(out, golden(), e2e::suite_tolerance(suite_dir()),
                            "--max-vram cutting against the golden image");
    const std::string log = log_of(r);
    EXPECT_TRUE(contains(log, "diffusion: 2 segments, cut (")) << log;
    EXPECT_TRUE(split_ranges(log, "diffusion").empty()) << log;
}

}  // namespace
