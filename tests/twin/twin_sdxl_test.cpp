// SDXL twin: the sdxl_tiny golden request split over two RPC workers (the UNet at its
// input/middle/output block boundaries, the bigG text encoder by layer; CLIP-L stays on the
// first device) gives the image of the same request on one of them.
#include <gtest/gtest.h>

#include <regex>

#include "twin_support.h"

namespace {

namespace e2e = ggdiff::e2e;

const std::string kSdxl = std::string(GGDIFF_BINARY_DIR) + "/fixtures/sdxl_mc32.safetensors";

// The manifest's sdxl_euler case (64x64, 4 steps).
std::vector<std::string> sdxl_args() {
    std::ifstream in(e2e::shared_dir() + "/golden/sdxl_tiny/manifest.json");
    const nlohmann::json m = nlohmann::json::parse(in, nullptr, false);
    if (m.is_discarded()) return {};
    for (const auto& c : m.value("cases", nlohmann::json::array())) {
        if (c.value("id", "") == "sdxl_euler") return c.value("args", std::vector<std::string>{});
    }
    return {};
}

class TwinSdxl : public ggdiff::twin::TwoWorkers {};

TEST_F(TwinSdxl, LayerSplitOfUnetAndBigGMatchesOneDevice) {
    ASSERT_TRUE(std::filesystem::is_regular_file(kSdxl)) << kSdxl;
    const std::vector<std::string> request = sdxl_args();
    ASSERT_FALSE(request.empty());
    auto run = [&](const std::string& backend, const std::string& out) {
        std::vector<std::string> args = {"-m", kSdxl};
        args.insert(args.end(), request.begin(), request.end());
        args.insert(args.end(),
                    {"--rpc-servers", servers(), "-v", "--backend", backend, "-o", out});
        return e2e::run_ggdiff(args, dir_, 900);
    };
    const e2e::RunResult one = run("RPC0", dir_ + "/one.png");
    ASSERT_TRUE(one.succeeded()) << one.describe();
    const std::string split_png = dir_ + "/split.png";
    const e2e::RunResult split = run("all=RPC0,diffusion=RPC0&RPC1,te=RPC0&RPC1", split_png);
    ASSERT_TRUE(split.succeeded()) << split.describe();

    // 19 UNet blocks (9 input, middle, 9 output) and bigG's 32 layers, each over both.
    const std::string log = log_of(split);
    ggdiff::twin::expect_ranges(log, "diffusion", {"RPC0", "RPC1"}, 19);
    ggdiff::twin::expect_ranges(log, "te", {"RPC0", "RPC1"}, 32);
    expect_same_image(split, split_png, dir_ + "/one.png", 1.5, "twin sdxl");
    const e2e::ImageDiff g = e2e::compare_images(
        dir_ + "/one.png", e2e::shared_dir() + "/golden/sdxl_tiny/sdxl_euler.png");
    ASSERT_TRUE(g.ok) << g.error;
    EXPECT_LE(g.mean_abs, 1.5) << "one device vs golden: max " << g.max_abs;
}

}  // namespace
