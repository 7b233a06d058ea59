// Twins over two ggdiff-rpc workers (TESTING.md, "Twin") for PhotoMaker, on the photomaker_tiny
// golden set of tests/golden (case pm_v1_euler: SDXL sdxl_mc32 with a real-size PhotoMaker v1
// ID encoder, two ID images, CFG): the ID encoder placed on another device than the rest
// (--backend photomaker=RPC1), and also with the SDXL UNet split by layers over RPC0 and RPC1,
// gives the one-device image and the golden one.
#include <gtest/gtest.h>

#include "../golden/e2e_support.h"
#include "twin_support.h"

namespace {

namespace e2e = ggdiff::e2e;
using e2e::contains;
using e2e::RunResult;
using namespace ggdiff::twin;

class PhotoMakerTwin : public CaseTwin {
  protected:
    std::string suite() const override { return "photomaker_tiny"; }
    std::string case_id() const override { return "pm_v1_euler"; }
    double same_image_tolerance() const override { return 0.5; }
    std::vector<std::string> model_files() const override {
        return {e2e::built_fixture("sdxl_mc32"),
                std::string(GGDIFF_BINARY_DIR) + "/fixtures/photomaker_v1_tiny.gguf"};
    }
    std::vector<std::string> model_args() const override {
        const std::vector<std::string> f = model_files();
        return {"-m", f[0], "--photo-maker", f[1]};
    }
    std::vector<std::string> single_device_placement() const override {
        return {"--backend", "all=RPC0"};
    }
    std::string cache_name() const override { return "photomaker_references"; }
};

TEST_F(PhotoMakerTwin, IdEncoderOnAnotherDevice) {
    RunResult r = twin({"--backend", "all=RPC0,photomaker=RPC1"}, "ID encoder on RPC1");
    EXPECT_TRUE(contains(log_of(r), "photomaker: computes on RPC1")) << log_of(r);
}

TEST_F(PhotoMakerTwin, UNetLayerSplitWithTheIdEncoderApart) {
    RunResult r = twin({"--backend", "all=RPC0,diffusion=RPC0&RPC1,photomaker=RPC1", "--split-mode",
                        "diffusion=layer"},
                       "UNet layer split, ID encoder on RPC1");
    const std::string log = log_of(r);
    EXPECT_TRUE(contains(log, "photomaker: computes on RPC1")) << log;
    EXPECT_TRUE(contains(log, "diffusion layer split")) << log;
}

}  // namespace
