// Wan VACE over two ggdiff-rpc workers (see twin_test.cpp for the pattern): the VACE blocks are
// no layer-split blocks (the recipe's segments are the main "blocks"), so their weights stay on
// the first device with the other non-block weights while the main blocks split; the VACE
// stream then crosses the devices at every VACE block. The frames must be the golden frames of
// tests/golden/wan_vace's control case (the reference engine's, which the single-device run
// matches there) within its tolerance.
//
// The VACE DiT fixture is 4.3 GB: every run ships it to the workers, so one split run only.
#include <gtest/gtest.h>

#include "../golden/wan_e2e.h"
#include "twin_support.h"

namespace {

namespace e2e = ggdiff::e2e;
namespace wan = ggdiff::e2e::wan;
using e2e::RunResult;
using namespace ggdiff::twin;

constexpr int kDitBlocks = 30;
constexpr const char* kCase = "wan_vace_control";

std::string suite_dir() {
    return std::string(GGDIFF_SOURCE_DIR) + "/tests/golden/wan_vace";
}

std::string vace_dit() {
    return wan::gguf_fixture("wan_1_3b_vace_dit");
}

class WanVaceTwin : public TwoWorkers {
  protected:
    void SetUp() override {
        ASSERT_TRUE(wan::prerequisites_ok());
        ASSERT_TRUE(std::filesystem::is_regular_file(vace_dit()))
            << "missing " << vace_dit() << " (ctest's fixture tests make it)";
        TwoWorkers::SetUp();
    }
};

TEST_F(WanVaceTwin, DitLayerSplitWithVaceBlocksOnTheFirstDevice) {
    std::vector<std::string> args = {"--diffusion-model", vace_dit(),      "--t5xxl",
                                     wan::umt5(),         "--vae",         wan::vae(),
                                     "--t5xxl-tokenizer", wan::tokenizer()};
    const std::vector<std::string> request = e2e::suite_case_args(suite_dir(), kCase);
    ASSERT_FALSE(request.empty());
    args.insert(args.end(), request.begin(), request.end());
    args.insert(args.end(), {"--rpc-servers", servers(), "-v", "--backend",
                             "all=RPC0,diffusion=RPC0&RPC1", "-o", dir_ + "/twin_%d.png"});
    RunResult r = e2e::run_ggdiff(args, dir_, 900);
    const double tolerance = e2e::suite_tolerance(suite_dir());
    for (int i : {0, 2, 4}) {
        expect_same_image(r, dir_ + "/twin_" + std::to_string(i) + ".png",
                          suite_dir() + "/" + kCase + "_" + std::to_string(i) + ".png", tolerance,
                          "wan VACE DiT layer split");
    }
    const std::string log = log_of(r);
    expect_ranges(log, "diffusion", {"RPC0", "RPC1"}, kDitBlocks);
    EXPECT_GE(max_splits(log, "DiT"), 2) << "the DiT ran on one device only\n" << log;
}

}  // namespace
