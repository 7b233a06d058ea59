// Twins over two ggdiff-rpc workers (TESTING.md, "Twin") for ERNIE-Image on its golden set of
// tests/golden (case ernie_euler: real CFG with the single-<s> negative). The DiT's layers and
// the Ministral text encoder's layers split across RPC0 and RPC1 give the single-device image
// and the golden one; a --max-vram budget below the DiT's weights runs its layers in
// segments uploaded in turn and gives the same image.
#include <gtest/gtest.h>

#include "../golden/e2e_support.h"
#include "twin_support.h"

namespace {

namespace fs = std::filesystem;
namespace e2e = ggdiff::e2e;
using e2e::contains;
using e2e::RunResult;
using namespace ggdiff::twin;

constexpr const char* kCase = "ernie_euler";
constexpr int kDitLayers = 2;   // ernie_tiny_dit
constexpr int kLlmLayers = 25;  // ernie_tiny_llm: the layers up to the one ERNIE-Image reads

class ErnieTwin : public TwoWorkers {
  protected:
    static std::string suite_dir() { return e2e::repo_suite_dir("ernie_tiny"); }
    static std::string golden() { return suite_dir() + "/" + kCase + ".png"; }
    static std::vector<std::string> files() {
        return {"--diffusion-model",
                e2e::built_fixture("ernie_tiny_dit"),
                "--llm",
                e2e::built_fixture("ernie_tiny_llm"),
                "--vae",
                e2e::built_fixture("flux2_vae")};
    }

    void SetUp() override {
        for (const std::string& f :
             {e2e::binary_path(), e2e::built_fixture("ernie_tiny_dit"),
              e2e::built_fixture("ernie_tiny_llm"), e2e::built_fixture("flux2_vae"), golden()}) {
            ASSERT_TRUE(fs::is_regular_file(f))
                << "missing " << f << " (run through ctest: its fixture tests make the files)";
        }
        ASSERT_FALSE(e2e::suite_case_args(suite_dir(), kCase).empty()) << "no case " << kCase;
        TwoWorkers::SetUp();
    }

    std::vector<std::string> request(const std::vector<std::string>& extra) const {
        std::vector<std::string> args = files();
        for (const std::string& a : e2e::suite_case_args(suite_dir(), kCase)) args.push_back(a);
        args.insert(args.end(), {"--rpc-servers", servers(), "-v"});
        args.insert(args.end(), extra.begin(), extra.end());
        return args;
    }

    RunResult generate(const std::vector<std::string>& extra, const std::string& out,
                       const std::string& log_dir) const {
        std::vector<std::string> args = request(extra);
        args.insert(args.end(), {"-o", out});
        return e2e::run_ggdiff(args, log_dir, 600);
    }

    // The case with the DiT and the LLM on RPC0 (the VAE on the CPU), made once per build of the
    // binaries.
    std::string single_device() const {
        const std::vector<std::string> extra = {"--backend", "all=RPC0,vae=CPU"};
        std::string key =
            join(extra, " ") + "|" + join(e2e::suite_case_args(suite_dir(), kCase), " ");
        for (const char* stem : {"ernie_tiny_dit", "ernie_tiny_llm", "flux2_vae"}) {
            key += "|" + file_stamp(e2e::built_fixture(stem));
        }
        return cached_image("ernie_references", key, [&](const std::string& path) {
            return generate(extra, path, dir_ + "/reference");
        });
    }

    // The case placed by `extra`: its image must be the single-device one and the golden one.
    RunResult twin(const std::vector<std::string>& extra, const char* what) {
        const double tolerance = e2e::suite_tolerance(suite_dir());
        const std::string reference = single_device();
        const std::string out = dir_ + "/twin.png";
        RunResult r = generate(extra, out, dir_);
        expect_same_image(r, out, reference, tolerance, what);
        if (r.succeeded()) {
            const e2e::ImageDiff g = e2e::compare_images(out, golden());
            EXPECT_TRUE(g.ok) << g.error;
            EXPECT_LE(g.mean_abs, tolerance) << what << " against the golden image";
        }
        return r;
    }
};

// The DiT and the text encoder each split by layers over both workers: both graphs cross the
// devices and the image is the one-device one.
TEST_F(ErnieTwin, DitAndLlmLayerSplit) {
    RunResult r = twin({"--backend", "all=RPC0,vae=CPU,diffusion=RPC0&RPC1,te=RPC0&RPC1",
                        "--split-mode", "diffusion=layer,te=layer"},
                       "DiT and LLM layer split");
    const std::string log = log_of(r);
    expect_ranges(log, "diffusion", {"RPC0", "RPC1"}, kDitLayers, /*first_may_be_empty=*/true);
    expect_ranges(log, "te", {"RPC0", "RPC1"}, kLlmLayers, /*first_may_be_empty=*/true);
    EXPECT_GE(max_splits(log, "DiT"), 2) << "the DiT ran on one device only\n" << log;
    EXPECT_GE(max_splits(log, "LLM"), 2) << "the LLM ran on one device only\n" << log;
    EXPECT_TRUE(contains(log, "ERNIE-Image")) << log;
}

// A --max-vram budget on RPC0 below the DiT's weights (from the dry run's sizes): its layers
// run as segments uploaded in turn, and the image is the same. (--stream-layers, which keeps
// two segments resident, needs more than this two-layer DiT's budget allows.)
TEST_F(ErnieTwin, MaxVramCutsTheDitInSegments) {
    const nlohmann::json dit = planned_component(
        request({"--backend", "all=RPC0,te=CPU", "--auto-fit", "--fit-dry-run"}), dir_ + "/dry");
    ASSERT_TRUE(dit.contains("params_bytes")) << dit;
    // The tiny DiT: two layers of 1.3 MiB and 1.4 MiB of embedders and final layers; a budget
    // 1 MiB short of the whole holds one layer at a time.
    const std::string budget =
        vram_budget("RPC0", dit, dit["params_bytes"].get<double>() - (1 << 20));
    RunResult r =
        twin({"--backend", "all=RPC0,te=CPU,vae=CPU", "--max-vram", budget}, "--max-vram cutting");
    const std::string log = log_of(r);
    EXPECT_TRUE(contains(log, "diffusion: 2 segments, cut (")) << log;
    EXPECT_TRUE(split_ranges(log, "diffusion").empty()) << log;
}

}  // namespace
