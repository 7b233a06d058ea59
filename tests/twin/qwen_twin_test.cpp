// Twin tests for Qwen Image over two ggdiff-rpc workers: the DiT's transformer_blocks and the
// LLM's layers split across RPC0 and RPC1 (and an auto-fit plan that splits both) give the
// single-device image (TESTING.md, "Twin"). The fixture has one DiT block and one LLM layer,
// so each split puts the block on one worker and the module's other weights on the other:
// the graph still crosses devices at the block boundary.
#include <gtest/gtest.h>

#include <regex>

#include "../golden/qwen_e2e.h"
#include "twin_support.h"

namespace {

namespace fs = std::filesystem;
using ggdiff::e2e::contains;
using ggdiff::e2e::RunResult;
using namespace ggdiff::twin;

constexpr uint64_t kGiB = 1ull << 30;

class QwenTwin : public TwoWorkers {
  protected:
    void SetUp() override {
        ASSERT_TRUE(fs::is_regular_file(ggdiff::e2e::binary_path()));
        ASSERT_TRUE(fs::is_regular_file(ggdiff::e2e::qwen_fixture("qwen_tiny_dit")))
            << "run through ctest: the fixture tests make the Qwen fixtures";
        TwoWorkers::SetUp();
    }

    RunResult generate(const std::vector<std::string>& extra, const std::string& out) const {
        std::vector<std::string> args = ggdiff::e2e::qwen_model_args();
        for (const std::string& a : ggdiff::e2e::qwen_euler_args()) args.push_back(a);
        args.insert(args.end(), {"--rpc-servers", servers(), "-v"});
        args.insert(args.end(), extra.begin(), extra.end());
        args.insert(args.end(), {"-o", out});
        return ggdiff::e2e::run_ggdiff(args, dir_, 500);
    }

    // Runs `single` and `placed`; both must succeed, give the golden image, and agree.
    std::string twin(const std::vector<std::string>& single,
                     const std::vector<std::string>& placed) {
        const std::string a = dir_ + "/single.png", b = dir_ + "/placed.png";
        RunResult r1 = generate(single, a);
        EXPECT_TRUE(r1.succeeded()) << r1.describe();
        RunResult r2 = generate(placed, b);
        EXPECT_TRUE(r2.succeeded()) << r2.describe();
        if (!r1.succeeded() || !r2.succeeded()) return "";
        const double tol = 1.5;
        expect_same_image(r2, b, a, tol, "qwen twin");
        const auto g =
            ggdiff::e2e::compare_images(b, ggdiff::e2e::qwen_golden_dir() + "/qwen_euler.png");
        EXPECT_TRUE(g.ok) << g.error;
        EXPECT_LE(g.mean_abs, tol) << "max " << g.max_abs;
        return r2.out + r2.err;
    }
};

// Asked for a row split, the RPC devices (no split buffer type) fall back to the layer split.
TEST_F(QwenTwin, DitAndLlmLayerSplit) {
    const std::string log =
        twin({"--backend", "RPC0"}, {"--backend", "diffusion=RPC0&RPC1,te=RPC0&RPC1,vae=RPC0",
                                     "--split-mode", "diffusion=row,te=layer"});
    EXPECT_TRUE(contains(log, "diffusion: row split is not possible")) << log;
    // Each module's blocks land on RPC1; its embeddings, norms and projections stay on RPC0.
    EXPECT_FALSE(split_devices(log, "diffusion").empty()) << log;
    EXPECT_FALSE(split_devices(log, "te").empty()) << log;
    EXPECT_GE(max_splits(log, "DiT"), 2) << "the DiT graph ran on one device only\n" << log;
    EXPECT_GE(max_splits(log, "LLM"), 2) << "the LLM graph ran on one device only\n" << log;
}

// --max-vram budgets that hold neither the DiT nor the LLM on one worker (params + the
// larger of their measured reserves), but both across the two: auto-fit splits both.
TEST_F(QwenTwin, AutoFitSplitsDitAndLlm) {
    std::vector<std::string> args = ggdiff::e2e::qwen_model_args();
    // At the size of the run: the reserves are the compute buffers measured at it.
    for (const std::string& a : ggdiff::e2e::qwen_euler_args()) args.push_back(a);
    args.insert(args.end(), {"--rpc-servers", servers(), "--auto-fit", "--fit-dry-run"});
    RunResult sizes_run = ggdiff::e2e::run_ggdiff(args, dir_ + "/dry", 120);
    ASSERT_TRUE(sizes_run.succeeded()) << sizes_run.describe();
    const nlohmann::json sizes = nlohmann::json::parse(sizes_run.out);
    uint64_t dit = 0, te = 0, reserve = 0;
    for (const auto& c : sizes.value("components", nlohmann::json::array())) {
        if (c.value("module", "") == "diffusion") dit = c.value("params_bytes", uint64_t{0});
        if (c.value("module", "") == "te") te = c.value("params_bytes", uint64_t{0});
        if (c.value("module", "") == "diffusion" || c.value("module", "") == "te")
            reserve = std::max(reserve, c.value("reserve_bytes", uint64_t{0}));
    }
    ASSERT_GT(dit, 0u);
    ASSERT_GT(te, 0u);
    // Budgets reserve + f * max(params): both components exceed 0.6 of the larger one.
    const double big = static_cast<double>(std::max(dit, te));
    ASSERT_GT(std::min(dit, te), 0.6 * big) << "fixture sizes changed: " << dit << " " << te;
    char buf[128];
    const double gib0 = (static_cast<double>(reserve) + 0.5 * big) / kGiB;
    const double gib1 = (static_cast<double>(reserve) + 0.6 * big) / kGiB;
    std::snprintf(buf, sizeof(buf), "RPC0=%.9f,RPC1=%.9f", gib0, gib1);
    std::string budgets = buf;
    for (const auto& dev : sizes.value("devices", nlohmann::json::array())) {
        const std::string name = dev.value("name", "");
        if (name != "RPC0" && name != "RPC1") budgets += "," + name + "=0.001";
    }
    args.insert(args.end(), {"--max-vram", budgets});
    RunResult plan_run = ggdiff::e2e::run_ggdiff(args, dir_ + "/dry2", 120);
    ASSERT_TRUE(plan_run.succeeded()) << plan_run.describe();
    const nlohmann::json plan = nlohmann::json::parse(plan_run.out);
    SCOPED_TRACE(plan.dump(1));
    std::vector<std::string> single;
    std::string single_backend;
    for (const auto& c : plan.value("components", nlohmann::json::array())) {
        const std::string module = c.value("module", "");
        if (module == "diffusion" || module == "te") {
            EXPECT_TRUE(c.value("split", false)) << module << " is not split";
            EXPECT_EQ(c.value("targets", nlohmann::json::array()),
                      nlohmann::json::array({"RPC1", "RPC0"}));
        }
        const auto targets = c.value("targets", nlohmann::json::array());
        if (targets.empty()) continue;
        single_backend +=
            (single_backend.empty() ? "" : ",") + module + "=" + targets[0].get<std::string>();
    }
    single = {"--backend", single_backend};
    if (!plan.value("params_backend", "").empty()) {
        single.insert(single.end(), {"--params-backend", plan.value("params_backend", "")});
    }
    const std::string log = twin(single, {"--auto-fit", "--max-vram", budgets});
    EXPECT_TRUE(contains(log, "auto-fit plan (time-share)")) << log;
    EXPECT_FALSE(split_devices(log, "diffusion").empty()) << log;
    EXPECT_FALSE(split_devices(log, "te").empty()) << log;
}

}  // namespace
