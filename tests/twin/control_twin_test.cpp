// Twin tests for the ControlNet module: a ControlNet on another device than the UNet
// (RPC1 while the UNet is on RPC0), on the CPU (--control-net-cpu) or with its weights
// kept on the CPU must give the image of the same request on one device, and the log must
// show where it ran. Two ggdiff-rpc workers on free loopback ports stand in for two
// GPUs; they are started for every test and always stopped.
#include <gtest/gtest.h>

#include "../control/control_support.h"
#include "../rpc/rpc_test_util.h"

namespace {

namespace fs = std::filesystem;
using ggdiff::e2e::contains;
using ggdiff::e2e::RunResult;

std::string stamp(const std::string& path) {
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) return path + ":missing";
    return path + ":" + std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
           std::to_string(st.st_mtim.tv_nsec);
}

class ControlTwin : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_TRUE(ggdiff::e2e::prerequisites_ok());
        ASSERT_TRUE(fs::is_regular_file(ggdiff::e2e::control_net_path()))
            << "run through ctest (fixture_controlnet_sd1_mc32)";
        std::string error;
        ASSERT_TRUE(w0_.start(&error)) << error;
        ASSERT_TRUE(w1_.start(&error)) << error;
        dir_ = ggdiff::e2e::fresh_dir();
    }
    void TearDown() override {
        w0_.stop();
        w1_.stop();
    }

    // The ControlNet request with both workers, -v and `extra`.
    RunResult generate(const std::vector<std::string>& extra, const std::string& out,
                       const std::string& log_dir) const {
        std::vector<std::string> args = ggdiff::e2e::small_request(
            {"-m", ggdiff::e2e::fixture_path(), "--control-net", ggdiff::e2e::control_net_path(),
             "--control-image", ggdiff::e2e::control_image_path(), "--control-strength", "1"},
            {"--rpc-servers", w0_.endpoint() + "," + w1_.endpoint(), "-v"}, out);
        args.insert(args.end(), extra.begin(), extra.end());
        return ggdiff::e2e::run_ggdiff(args, log_dir, 300);
    }

    // Everything on RPC0, made once per build of the binaries (ctest runs every test in
    // its own process).
    std::string single_device() const {
        const std::string key =
            stamp(ggdiff::e2e::binary_path()) + "|" + stamp(rpc_test::binary("ggdiff-rpc")) + "|" +
            stamp(ggdiff::e2e::fixture_path()) + "|" + stamp(ggdiff::e2e::control_net_path());
        const std::string cache = std::string(GGDIFF_TEST_TMP) + "/references";
        fs::create_directories(cache);
        char name[64];
        std::snprintf(name, sizeof(name), "/control_%016zx", std::hash<std::string>{}(key));
        const std::string path = cache + name + ".png";
        if (fs::is_regular_file(path)) return path;
        const std::string tmp = cache + name + ".tmp" + std::to_string(getpid()) + ".png";
        RunResult r = generate({"--backend", "RPC0"}, tmp, dir_ + "/reference");
        if (!r.succeeded() || !fs::is_regular_file(tmp)) {
            ADD_FAILURE() << "the single-device reference failed\n" << r.describe();
            return "";
        }
        EXPECT_TRUE(contains(r.err, "ControlNet: computes on RPC0")) << r.err;
        fs::rename(tmp, path);
        return path;
    }

    // Runs the placement and compares its image with the single-device one.
    RunResult twin(const std::vector<std::string>& extra) {
        const std::string ref = single_device();
        const std::string out = dir_ + "/twin.png";
        RunResult r = generate(extra, out, dir_);
        EXPECT_TRUE(r.succeeded()) << r.describe();
        if (!r.succeeded() || ref.empty()) return r;
        const ggdiff::e2e::ImageDiff d = ggdiff::e2e::compare_images(out, ref);
        EXPECT_TRUE(d.ok) << d.error;
        EXPECT_LE(d.mean_abs, ggdiff::e2e::manifest_tolerance()) << "max " << d.max_abs << "\n"
                                                                 << r.describe();
        std::printf("control twin: mean_abs_diff %.3f max_abs_diff %d\n", d.mean_abs, d.max_abs);
        return r;
    }

    rpc_test::Worker w0_, w1_;
    std::string dir_;
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
