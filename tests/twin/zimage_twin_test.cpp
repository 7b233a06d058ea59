// Twin tests for Z-Image over two ggdiff-rpc workers (TESTING.md, "Twin"): the DiT's main
// layers and the Qwen3 text model's layers split across RPC0 and RPC1 give the single-device
// image, and --auto-fit plans the DiT and the text model as splittable modules. The fixture has
// one main DiT layer and one text-model layer, so each split puts that layer on one worker and
// the module's other weights (embedders, refiners, norms) on the other: the graph still crosses
// devices at the layer boundary.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../golden/zimage_e2e.h"
#include "twin_support.h"

namespace {

namespace fs = std::filesystem;
namespace e2e = ggdiff::e2e;
using e2e::contains;
using e2e::RunResult;
using namespace ggdiff::twin;

constexpr double kTolerance = 1.5;

class ZImageTwin : public TwoWorkers {
  protected:
    void SetUp() override {
        ASSERT_TRUE(fs::is_regular_file(e2e::binary_path()));
        ASSERT_TRUE(fs::is_regular_file(e2e::zimage_fixture("zimage_tiny_dit")))
            << "run through ctest: the fixture tests make the Z-Image fixtures";
        TwoWorkers::SetUp();
    }
    std::vector<std::string> request(const std::vector<std::string>& extra) const {
        std::vector<std::string> args = e2e::zimage_model_args();
        for (const std::string& a : e2e::zimage_euler_args()) args.push_back(a);
        args.insert(args.end(), {"--rpc-servers", servers(), "-v"});
        args.insert(args.end(), extra.begin(), extra.end());
        return args;
    }
    RunResult generate(const std::vector<std::string>& extra, const std::string& out) const {
        std::vector<std::string> args = request(extra);
        args.insert(args.end(), {"-o", out});
        return e2e::run_ggdiff(args, dir_, 500);
    }
    std::string golden() const { return e2e::zimage_golden_dir() + "/zimage_euler.png"; }
};

TEST_F(ZImageTwin, DitAndTextModelLayerSplitEqualOneDevice) {
    const std::string a = dir_ + "/single.png", b = dir_ + "/placed.png";
    RunResult single = generate({"--backend", "RPC0"}, a);
    ASSERT_TRUE(single.succeeded()) << single.describe();
    RunResult placed = generate({"--backend", "diffusion=RPC0&RPC1,te=RPC0&RPC1,vae=RPC0"}, b);
    expect_same_image(placed, b, a, kTolerance, "zimage twin");
    expect_same_image(placed, b, golden(), kTolerance, "zimage twin vs golden");

    const std::string log = log_of(placed);
    // Each module's layer lands on RPC1; its embedders, refiners and norms stay on RPC0.
    expect_ranges(log, "diffusion", {"RPC0", "RPC1"}, 1, true);
    expect_ranges(log, "te", {"RPC0", "RPC1"}, 1, true);
    EXPECT_GE(max_splits(log, "DiT"), 2) << "the DiT graph ran on one device only\n" << log;
    EXPECT_GE(max_splits(log, "LLM"), 2) << "the LLM graph ran on one device only\n" << log;
    EXPECT_EQ(max_splits(log_of(single), "DiT"), 1);
}

TEST_F(ZImageTwin, AutoFitPlansTheDitAndTextModelAsSplittable) {
    std::vector<std::string> dry = request({"--auto-fit", "--fit-dry-run"});
    RunResult r = e2e::run_ggdiff(dry, dir_ + "/dry", 120);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    nlohmann::json plan;
    try {
        plan = nlohmann::json::parse(r.out);
    } catch (const std::exception& e) {
        FAIL() << "--fit-dry-run did not print JSON: " << e.what() << "\n" << r.describe();
    }
    SCOPED_TRACE(plan.dump(1));
    std::map<std::string, nlohmann::json> by_module;
    for (const auto& c : plan.value("components", nlohmann::json::array()))
        by_module[c.value("module", "")] = c;
    ASSERT_EQ(by_module.count("diffusion"), 1u);
    EXPECT_TRUE(by_module["diffusion"].value("splittable", false));
    EXPECT_TRUE(by_module["te"].value("splittable", false));
    EXPECT_FALSE(by_module["vae"].value("splittable", true));
    EXPECT_GT(by_module["diffusion"].value("params_bytes", uint64_t{0}), 0u);

    // The plan runs and gives the reference image.
    const std::string out = dir_ + "/fit.png";
    RunResult fit = generate({"--auto-fit"}, out);
    expect_same_image(fit, out, golden(), kTolerance, "zimage auto-fit vs golden");
}

}  // namespace
