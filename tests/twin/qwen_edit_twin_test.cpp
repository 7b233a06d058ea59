// Twin tests for Qwen Image Edit over two ggdiff-rpc workers (TESTING.md, "Twin"): the DiT's
// blocks and the LLM's layers split across RPC0 and RPC1 with a reference image give the
// single-device golden image of qedit_ref1, the vision tower staying whole on the text
// encoder's first device; the auto-fit dry run plans the text encoder and the DiT.
// (Data-parallel batches with reference images are tested on the smaller Kontext fixture,
// tests/twin/kontext_twin_test.cpp: this fixture's 2.2 GiB twice over RPC costs minutes.)
#include <gtest/gtest.h>

#include <regex>

#include "../golden/qwen_edit_e2e.h"
#include "twin_support.h"

namespace {

namespace fs = std::filesystem;
namespace qe = ggdiff::e2e::qwen_edit;
using ggdiff::e2e::contains;
using ggdiff::e2e::RunResult;
using namespace ggdiff::twin;

class QwenEditTwin : public TwoWorkers {
  protected:
    void SetUp() override {
        ASSERT_TRUE(qe::prerequisites_ok());
        TwoWorkers::SetUp();
    }

    // The golden case qedit_ref1 (one reference image) with `extra`, on the workers.
    std::vector<std::string> request(const std::vector<std::string>& extra,
                                     const std::string& out) const {
        std::vector<std::string> args = qe::model_args();
        for (const std::string& a : qe::case_args("qedit_ref1")) args.push_back(a);
        args.insert(args.end(), {"--rpc-servers", servers(), "-v"});
        args.insert(args.end(), extra.begin(), extra.end());
        args.insert(args.end(), {"-o", out});
        return args;
    }
    RunResult generate(const std::vector<std::string>& extra, const std::string& out) const {
        return ggdiff::e2e::run_ggdiff(request(extra, out), dir_, 600);
    }
};

// Asked for a layer split of both, the DiT and the LLM run across the two workers; the vision
// tower (not split) runs on RPC0, and the image is the single-device one and the golden one.
TEST_F(QwenEditTwin, DitAndLlmLayerSplitWithReference) {
    const std::string single = dir_ + "/single.png", placed = dir_ + "/placed.png";
    RunResult r1 = generate({"--backend", "RPC0"}, single);
    ASSERT_TRUE(r1.succeeded()) << r1.describe();
    RunResult r2 = generate({"--backend", "diffusion=RPC0&RPC1,te=RPC0&RPC1,vae=RPC0",
                             "--split-mode", "diffusion=layer,te=layer"},
                            placed);
    ASSERT_TRUE(r2.succeeded()) << r2.describe();
    expect_same_image(r2, placed, single, qe::tolerance(), "qwen edit layer split");
    const auto g = ggdiff::e2e::compare_images(placed, qe::ref1_golden());
    ASSERT_TRUE(g.ok) << g.error;
    EXPECT_LE(g.mean_abs, qe::tolerance()) << "max " << g.max_abs;
    const std::string log = log_of(r2);
    EXPECT_FALSE(split_devices(log, "diffusion").empty()) << log;
    EXPECT_FALSE(split_devices(log, "te").empty()) << log;
    EXPECT_GE(max_splits(log, "DiT"), 2) << "the DiT graph ran on one device only\n" << log;
    EXPECT_GE(max_splits(log, "LLM"), 2) << "the LLM graph ran on one device only\n" << log;
    // "vision: computes on RPC0": the tower is not split (the last such line: the compute
    // reserves are first measured on the CPU).
    std::string vision;
    const std::regex re(R"(vision: computes on ([^\n]+))");
    for (auto it = std::sregex_iterator(log.begin(), log.end(), re); it != std::sregex_iterator();
         ++it) {
        vision = (*it)[1].str();
    }
    EXPECT_EQ(vision, "RPC0") << log;
}

// The auto-fit dry run of an edit request plans the text encoder (vision tower included) and the
// DiT with their measured reserves.
TEST_F(QwenEditTwin, AutoFitDryRunPlansTeAndDiffusion) {
    std::vector<std::string> args = request({"--auto-fit", "--fit-dry-run"}, dir_ + "/no.png");
    RunResult r = ggdiff::e2e::run_ggdiff(args, dir_ + "/dry", 300);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    const nlohmann::json plan = nlohmann::json::parse(r.out, nullptr, false);
    ASSERT_FALSE(plan.is_discarded()) << r.describe();
    SCOPED_TRACE(plan.dump(1));
    bool te = false, dit = false;
    for (const auto& c : plan.value("components", nlohmann::json::array())) {
        const std::string module = c.value("module", "");
        if (module != "te" && module != "diffusion") continue;
        (module == "te" ? te : dit) = true;
        EXPECT_GT(c.value("params_bytes", uint64_t{0}), 0u) << module;
        EXPECT_GT(c.value("reserve_bytes", uint64_t{0}), 0u) << module;
        EXPECT_FALSE(c.value("targets", nlohmann::json::array()).empty()) << module;
    }
    EXPECT_TRUE(te) << "no te in the plan";
    EXPECT_TRUE(dit) << "no diffusion in the plan";
    EXPECT_FALSE(fs::exists(dir_ + "/no.png"));
}

}  // namespace
