// FLUX.1 twins over two ggdiff-rpc workers (see twin_test.cpp for the pattern): the DiT split
// over double_blocks and single_blocks, the text encoder split (T5 is the dominant encoder,
// CLIP-L stays on the first device) and an auto-fit budget that forces the DiT to split each
// give the single-device image of the flux_tiny golden case `flux_euler`.
#include <gtest/gtest.h>

#include <functional>
#include <regex>

#include "../golden/flux_e2e.h"
#include "twin_support.h"

namespace {

namespace fs = std::filesystem;
namespace e2e = ggdiff::e2e;
namespace flux = ggdiff::e2e::flux;
using e2e::contains;
using e2e::RunResult;
using namespace ggdiff::twin;

// flux_tiny: 2 double + 2 single blocks; T5 with 2 blocks.
constexpr int kDitBlocks = 4;
constexpr int kT5Blocks = 2;
constexpr uint64_t kGiB = 1ull << 30;

class FluxTwin : public TwoWorkers {
  protected:
    void SetUp() override {
        ASSERT_TRUE(flux::prerequisites_ok());
        ASSERT_FALSE(flux::case_args("flux_euler").empty());
        TwoWorkers::SetUp();
    }

    RunResult generate(const std::vector<std::string>& extra, const std::string& out,
                       const std::string& log_dir) const {
        std::vector<std::string> args = flux::model_args();
        for (const std::string& a : flux::case_args("flux_euler")) args.push_back(a);
        args.insert(args.end(), {"--rpc-servers", servers(), "-v"});
        args.insert(args.end(), extra.begin(), extra.end());
        args.insert(args.end(), {"-o", out});
        return e2e::run_ggdiff(args, log_dir, 400);
    }

    // The image of `extra`, made once per build of the binaries (cached by arguments).
    std::string reference(const std::vector<std::string>& extra) const {
        const std::string key = join(extra, " ") + "|" + file_stamp(flux::dit());
        return cached_image("flux_references", key, [&](const std::string& path) {
            return generate(extra, path, dir_ + "/reference");
        });
    }

    std::string single_device() const { return reference({"--backend", "RPC0"}); }

    RunResult twin(const std::vector<std::string>& extra, const std::string& reference_path) {
        const std::string out = dir_ + "/twin.png";
        RunResult r = generate(extra, out, dir_);
        expect_same_image(r, out, reference_path, flux::tolerance());
        return r;
    }
};

TEST_F(FluxTwin, SingleDeviceMatchesGolden) {
    const std::string ref = single_device();
    ASSERT_FALSE(ref.empty());
    const auto d = e2e::compare_images(ref, flux::golden("flux_euler.png"));
    ASSERT_TRUE(d.ok) << d.error;
    EXPECT_LE(d.mean_abs, flux::tolerance()) << "max " << d.max_abs;
}

TEST_F(FluxTwin, DitLayerSplitOverDoubleAndSingleBlocks) {
    RunResult r = twin({"--backend", "all=RPC0,diffusion=RPC0&RPC1"}, single_device());
    const std::string log = log_of(r);
    expect_ranges(log, "diffusion", {"RPC0", "RPC1"}, kDitBlocks);
    EXPECT_TRUE(split_ranges(log, "te").empty()) << log;
    EXPECT_GE(max_splits(log, "FLUX DiT"), 2) << "the DiT ran on one device only\n" << log;
}

// Skip-layer guidance runs the DiT with blocks left out of the graph (both double blocks, or
// both single blocks): split over two workers, or cut into segments by a --max-vram budget
// that holds about half of its weights, it still gives the one-device image.
TEST_F(FluxTwin, SkipLayerGuidanceOverSplitAndCutDit) {
    for (const char* layers : {"0,1", "2,3"}) {
        SCOPED_TRACE(layers);
        const std::vector<std::string> slg = {
            "--slg-scale",      "2.5", "--skip-layer-start", "0.1",
            "--skip-layer-end", "0.7", "--skip-layers",      layers};
        std::vector<std::string> single = {"--backend", "all=CPU,diffusion=RPC0"};
        single.insert(single.end(), slg.begin(), slg.end());
        const std::string ref = reference(single);
        ASSERT_FALSE(ref.empty());
        std::vector<std::string> split = {"--backend", "all=CPU,diffusion=RPC0&RPC1"};
        split.insert(split.end(), slg.begin(), slg.end());
        RunResult r = twin(split, ref);
        expect_ranges(log_of(r), "diffusion", {"RPC0", "RPC1"}, kDitBlocks);
        // The DiT's weights are about 14 MiB and its compute buffer about 5 MiB at 64x64.
        std::vector<std::string> cut = {"--backend", "all=CPU,diffusion=RPC0", "--max-vram",
                                        "RPC0=0.012"};
        cut.insert(cut.end(), slg.begin(), slg.end());
        r = twin(cut, ref);
        EXPECT_TRUE(contains(log_of(r), "diffusion segment 1")) << log_of(r);
    }
}

// RPC devices have no split buffer type: --split-mode row says so and splits by layers.
TEST_F(FluxTwin, RowSplitFallsBackToLayerSplit) {
    RunResult r =
        twin({"--backend", "all=RPC0,diffusion=RPC0&RPC1", "--split-mode", "row"}, single_device());
    const std::string log = log_of(r);
    EXPECT_TRUE(contains(log, "diffusion: row split is not possible")) << log;
    EXPECT_TRUE(contains(log, "using layer split")) << log;
    expect_ranges(log, "diffusion", {"RPC0", "RPC1"}, kDitBlocks);
}

// T5 takes the split; CLIP-L (pooled vector only) stays on the first device. The fixture's
// T5 is so narrow that its token embedding (non-block, on the first device) outweighs both
// blocks: they go to RPC1, and the graph still runs on both devices.
TEST_F(FluxTwin, T5LayerSplit) {
    RunResult r = twin({"--backend", "all=RPC0,te=RPC0&RPC1"}, single_device());
    const std::string log = log_of(r);
    expect_ranges(log, "te", {"RPC0", "RPC1"}, kT5Blocks, /*first_may_be_empty=*/true);
    EXPECT_TRUE(split_ranges(log, "diffusion").empty()) << log;
    EXPECT_GE(max_splits(log, "T5"), 2) << log;
    EXPECT_EQ(max_splits(log, "CLIP-L"), 1) << log;
}

// --auto-fit with budgets that hold the DiT only when it is split over both workers.
TEST_F(FluxTwin, AutoFitSplitsTheDit) {
    auto dry_run = [&](const std::vector<std::string>& extra) -> nlohmann::json {
        // At the size of the run: the reserves are the compute buffers measured at it.
        std::vector<std::string> args = flux::model_args();
        for (const std::string& a : flux::case_args("flux_euler")) args.push_back(a);
        args.insert(args.end(), {"--rpc-servers", servers(), "--auto-fit", "--fit-dry-run"});
        args.insert(args.end(), extra.begin(), extra.end());
        RunResult r = e2e::run_ggdiff(args, dir_ + "/dry", 120);
        EXPECT_TRUE(r.succeeded()) << r.describe();
        try {
            return nlohmann::json::parse(r.out);
        } catch (const std::exception& e) {
            ADD_FAILURE() << "--fit-dry-run did not print JSON: " << e.what() << "\n"
                          << r.describe();
            return nlohmann::json::object();
        }
    };
    auto component = [](const nlohmann::json& plan, const std::string& module) {
        for (const auto& c : plan.value("components", nlohmann::json::array())) {
            if (c.value("module", "") == module) return c;
        }
        return nlohmann::json::object();
    };
    const nlohmann::json sizes = dry_run({});
    const nlohmann::json dit = component(sizes, "diffusion");
    ASSERT_TRUE(dit.contains("params_bytes")) << sizes.dump(1);
    // The DiT and the text encoders (T5 takes their split) are splittable, the VAE is not.
    EXPECT_TRUE(dit.value("splittable", false)) << sizes.dump(1);
    EXPECT_TRUE(component(sizes, "te").value("splittable", false)) << sizes.dump(1);
    EXPECT_FALSE(component(sizes, "vae").value("splittable", true)) << sizes.dump(1);
    const uint64_t params = dit["params_bytes"].get<uint64_t>();
    const uint64_t reserve = dit["reserve_bytes"].get<uint64_t>();
    ASSERT_GT(params, 0u);

    // RPC1 holds 70% of the DiT above its reserve, RPC0 55%: neither holds it alone.
    char buf[128];
    const double gib0 = (static_cast<double>(reserve) + 0.55 * params) / kGiB;
    const double gib1 = (static_cast<double>(reserve) + 0.70 * params) / kGiB;
    std::snprintf(buf, sizeof(buf), "RPC0=%.9f,RPC1=%.9f", gib0, gib1);
    std::string budgets = buf;
    for (const auto& dev : sizes.value("devices", nlohmann::json::array())) {
        const std::string name = dev.value("name", "");
        if (name != "RPC0" && name != "RPC1") budgets += "," + name + "=0.001";
    }
    const nlohmann::json plan = dry_run({"--max-vram", budgets});
    SCOPED_TRACE(plan.dump(1));
    const nlohmann::json d = component(plan, "diffusion");
    EXPECT_EQ(d.value("split", false), true);
    EXPECT_EQ(d.value("targets", nlohmann::json::array()), nlohmann::json::array({"RPC1", "RPC0"}));

    std::vector<std::string> single_backend;
    for (const auto& c : plan.value("components", nlohmann::json::array())) {
        const auto targets = c.value("targets", nlohmann::json::array());
        if (targets.empty()) continue;
        single_backend.push_back(c.value("module", "") + "=" + targets[0].get<std::string>());
    }
    std::vector<std::string> single = {"--backend", join(single_backend, ",")};
    if (!plan.value("params_backend", "").empty()) {
        single.insert(single.end(), {"--params-backend", plan.value("params_backend", "")});
    }
    const std::string ref = reference(single);
    ASSERT_FALSE(ref.empty());

    RunResult r = twin({"--auto-fit", "--max-vram", budgets}, ref);
    const std::string log = log_of(r);
    EXPECT_TRUE(contains(log, "diffusion=RPC1&RPC0")) << log;
    expect_ranges(log, "diffusion", {"RPC1", "RPC0"}, kDitBlocks);
    const auto g = e2e::compare_images(dir_ + "/twin.png", flux::golden("flux_euler.png"));
    ASSERT_TRUE(g.ok) << g.error;
    EXPECT_LE(g.mean_abs, flux::tolerance()) << "max " << g.max_abs;
}

}  // namespace
