// SDXL twin: the sdxl_tiny golden request split over two RPC workers (the UNet at its
// input/middle/output block boundaries, the bigG text encoder by layer; CLIP-L stays on the
// first device) gives the image of the same request on one of them.
#include <gtest/gtest.h>

#include <regex>

#include "../golden/e2e_support.h"
#include "../rpc/rpc_test_util.h"

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

// "<module> layer split: <device> <- blocks [a, b)" lines: (device, a, b).
std::vector<std::tuple<std::string, int, int>> ranges(const std::string& log,
                                                      const std::string& module) {
    std::vector<std::tuple<std::string, int, int>> out;
    const std::regex re(module + R"( layer split: (\S+) <- blocks \[(\d+), (\d+)\))");
    for (auto it = std::sregex_iterator(log.begin(), log.end(), re); it != std::sregex_iterator();
         ++it) {
        out.emplace_back((*it)[1].str(), std::stoi((*it)[2].str()), std::stoi((*it)[3].str()));
    }
    return out;
}

TEST(TwinSdxl, LayerSplitOfUnetAndBigGMatchesOneDevice) {
    ASSERT_TRUE(std::filesystem::is_regular_file(kSdxl)) << kSdxl;
    const std::vector<std::string> request = sdxl_args();
    ASSERT_FALSE(request.empty());
    rpc_test::Worker w0, w1;
    std::string error;
    ASSERT_TRUE(w0.start(&error)) << error;
    ASSERT_TRUE(w1.start(&error)) << error;
    const std::string dir = e2e::fresh_dir();
    auto run = [&](const std::string& backend, const std::string& out) {
        std::vector<std::string> args = {"-m", kSdxl};
        args.insert(args.end(), request.begin(), request.end());
        args.insert(args.end(), {"--rpc-servers", w0.endpoint() + "," + w1.endpoint(), "-v",
                                 "--backend", backend, "-o", out});
        return e2e::run_ggdiff(args, dir, 900);
    };
    const e2e::RunResult one = run("RPC0", dir + "/one.png");
    ASSERT_TRUE(one.succeeded()) << one.describe();
    const e2e::RunResult split =
        run("all=RPC0,diffusion=RPC0&RPC1,te=RPC0&RPC1", dir + "/split.png");
    ASSERT_TRUE(split.succeeded()) << split.describe();
    w0.stop();
    w1.stop();

    const std::string log = split.out + split.err;
    // 19 UNet blocks (9 input, middle, 9 output) and bigG's 32 layers, each over both.
    for (const auto& [module, blocks] :
         {std::pair<std::string, int>{"diffusion", 19}, {"te", 32}}) {
        const auto r = ranges(log, module);
        ASSERT_EQ(r.size(), 2u) << module << "\n" << log;
        EXPECT_EQ(std::get<0>(r[0]), "RPC0");
        EXPECT_EQ(std::get<0>(r[1]), "RPC1");
        EXPECT_EQ(std::get<1>(r[0]), 0);
        EXPECT_EQ(std::get<2>(r[0]), std::get<1>(r[1]));
        EXPECT_EQ(std::get<2>(r[1]), blocks) << module;
    }
    const e2e::ImageDiff d = e2e::compare_images(dir + "/split.png", dir + "/one.png");
    ASSERT_TRUE(d.ok) << d.error;
    EXPECT_LE(d.mean_abs, 1.5) << "max " << d.max_abs;
    const e2e::ImageDiff g = e2e::compare_images(
        dir + "/one.png", e2e::shared_dir() + "/golden/sdxl_tiny/sdxl_euler.png");
    ASSERT_TRUE(g.ok) << g.error;
    EXPECT_LE(g.mean_abs, 1.5) << "max " << g.max_abs;
    std::printf("twin sdxl: split vs one device %.3f, one device vs golden %.3f\n", d.mean_abs,
                g.mean_abs);
}

}  // namespace
