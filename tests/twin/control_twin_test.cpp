// Twin tests for the ControlNet module: a ControlNet on another device than the UNet
// (RPC1 while the UNet is on RPC0), on the CPU (--control-net-cpu) or with its weights
// kept on the CPU must give the image of the same request on one device, and the log must
// show where it ran. Two ggdiff-rpc workers on free loopback ports stand in for two
// GPUs; they are started for every test and always stopped.
#include <gtest/gtest.h>

#include "../control/control_support.h"
#include "twin_support.h"

namespace {

namespace fs = std::filesystem;
using ggdiff::e2e::contains;
using ggdiff::e2e::RunResult;
using namespace ggdiff::twin;

class ControlTwin : public TwoWorkers {
  protected:
    void SetUp() override {
        ASSERT_TRUE(ggdiff::e2e::prerequisites_ok());
        ASSERT_TRUE(fs::is_regular_file(ggdiff::e2e::control_net_path()))
            << "run through ctest (fixture_controlnet_sd1_mc32)";
        TwoWorkers::SetUp();
    }

    // The ControlNet request with both workers, -v and `extra`.
    RunResult generate(const std::vector<std::string>& extra, const std::string& out,
                       const std::string& log_dir) const {
        std::vector<std::string> args = ggdiff::e2e::small_request(
            {"-m", ggdiff::e2e::fixture_path(), "--control-net", ggdiff::e2e::control_net_path(),
             "--control-image", ggdiff::e2e::control_image_path(), "--control-strength", "1"},
            {"--rpc-servers", servers(), "-v"}, out);
        args.insert(args.end(), extra.begin(), extra.end());
        return ggdiff::e2e::run_ggdiff(args, log_dir, 300);
    }

    // Everything on RPC0, made once per build of the binaries.
    std::string single_device() const {
        const std::string key = "control|" + file_stamp(ggdiff::e2e::fixture_path()) + "|" +
                                file_stamp(ggdiff::e2e::control_net_path());
        return cached_image("references", key, [&](const std::string& path) {
            RunResult r = generate({"--backend", "RPC0"}, path, dir_ + "/reference");
            EXPECT_TRUE(contains(r.err, "ControlNet: computes on RPC0")) << r.err;
            return r;
        });
    }

    // Runs the placement and compares its image with the single-device one.
    RunResult twin(const std::vector<std::string>& extra) {
        const std::string ref = single_device();
        const std::string out = dir_ + "/twin.png";
        RunResult r = generate(extra, out, dir_);
        expect_same_image(r, out, ref, ggdiff::e2e::manifest_tolerance(), "control twin");
        return r;
    }
};

TEST_F(ControlTwin, ControlNetOnAnotherDevice) {
    const RunResult r = twin({"--backend", "all=RPC0,control=RPC1"});
    EXPECT_TRUE(contains(r.err, "ControlNet: computes on RPC1")) << r.err;
    EXPECT_TRUE(contains(r.err, "UNet: computes on RPC0")) << r.err;
}

TEST_F(ControlTwin, ControlNetOnTheCpu) {
    const RunResult r = twin({"--backend", "RPC0", "--control-net-cpu"});
    EXPECT_TRUE(contains(r.err, "ControlNet: computes on CPU")) << r.err;
    EXPECT_TRUE(contains(r.err, "UNet: computes on RPC0")) << r.err;
}

TEST_F(ControlTwin, ControlNetWeightsOnTheCpu) {
    const RunResult r =
        twin({"--backend", "all=RPC0,controlnet=RPC1", "--params-backend", "controlnet=cpu"});
    EXPECT_TRUE(contains(r.err, "ControlNet: computes on RPC1")) << r.err;
    EXPECT_TRUE(contains(r.err, "ControlNet: 340 weights")) << r.err;
    EXPECT_TRUE(contains(r.err, "params device (staged per phase)")) << r.err;
}

}  // namespace
