// LongCat-Image twins over two ggdiff-rpc workers (TESTING.md, "Twin"), on the longcat_tiny
// golden set of tests/golden: the DiT's double and single blocks split by layers across RPC0
// and RPC1, with a reference image read by the LLM's vision tower and joining the DiT's
// sequence (case longcat_edit_ref1), gives the single-device image and the golden one; a
// --max-vram budget below the DiT's weights streams it in segments and gives the same image.
// The LLM fixture (one 3584-wide layer and a 152k-token table) stays on the CPU: shipping it to
// the workers would cost more than it tests (LLM layer splits are tested on Qwen Image Edit).
#include <gtest/gtest.h>

#include "../golden/e2e_support.h"
#include "twin_support.h"

namespace {

namespace fs = std::filesystem;
namespace e2e = ggdiff::e2e;
using e2e::contains;
using e2e::RunResult;
using namespace ggdiff::twin;

constexpr int kDitBlocks = 4;  // longcat_tiny_dit: 2 double + 2 single blocks
constexpr const char* kCase = "longcat_edit_ref1";
constexpr uint64_t kGiB = 1ull << 30;

std::string suite_dir() {
    return std::string(GGDIFF_SOURCE_DIR) + "/tests/golden/longcat_tiny";
}
std::string fixture(const std::string& stem) {
    return std::string(GGDIFF_BINARY_DIR) + "/fixtures/" + stem + ".safetensors";
}

class LongCatTwin : public TwoWorkers {
  protected:
    void SetUp() override {
        for (const std::string& f :
             {e2e::binary_path(), fixture("longcat_tiny_dit"), fixture("qwen_edit_tiny_llm"),
              fixture("flux_ae"), suite_dir() + "/" + kCase + ".png"}) {
            ASSERT_TRUE(fs::is_regular_file(f))
                << "missing " << f << " (run through ctest: its fixture tests make the files)";
        }
        ASSERT_FALSE(e2e::suite_case_args(suite_dir(), kCase).empty()) << "no case " << kCase;
        TwoWorkers::SetUp();
    }

    std::vector<std::string> request(const std::vector<std::string>& extra) const {
        std::vector<std::string> args = {"--diffusion-model",
                                         fixture("longcat_tiny_dit"),
                                         "--llm",
                                         fixture("qwen_edit_tiny_llm"),
                                         "--vae",
                                         fixture("flux_ae"),
                                         "--llm-tokenizer",
                                         e2e::shared_dir() + "/data/qwen2_synthetic"};
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

    // The case with the DiT and the VAE on RPC0, made once per build of the binaries.
    std::string single_device() const {
        const std::vector<std::string> extra = {"--backend", "all=RPC0,te=CPU"};
        const std::string key =
            join(extra, " ") + "|" + join(e2e::suite_case_args(suite_dir(), kCase), " ") + "|" +
            file_stamp(fixture("longcat_tiny_dit")) + "|" +
            file_stamp(fixture("qwen_edit_tiny_llm")) + "|" + file_stamp(fixture("flux_ae"));
        return cached_image("longcat_references", key, [&](const std::string& path) {
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
            const e2e::ImageDiff g =
                e2e::compare_images(out, suite_dir() + "/" + std::string(kCase) + ".png");
            EXPECT_TRUE(g.ok) << g.error;
            EXPECT_LE(g.mean_abs, tolerance) << what << " against the golden image";
        }
        return r;
    }
};

// The DiT split by layers over both workers, the reference latents in its sequence: the graph
// crosses the devices and the image is the one-device one.
TEST_F(LongCatTwin, DitLayerSplitWithReference) {
    RunResult r = twin(
        {"--backend", "all=RPC0,te=CPU,diffusion=RPC0&RPC1", "--split-mode", "diffusion=layer"},
        "LongCat DiT layer split");
    const std::string log = log_of(r);
    expect_ranges(log, "diffusion", {"RPC0", "RPC1"}, kDitBlocks, /*first_may_be_empty=*/true);
    EXPECT_GE(max_splits(log, "DiT"), 2) << "the DiT ran on one device only\n" << log;
    EXPECT_TRUE(contains(log, "LongCat-Image")) << log;
}

// A --max-vram budget on RPC0 half a block short of the DiT's weights (from the dry run's
// sizes): its blocks run as streamed segments, and the image is the same.
TEST_F(LongCatTwin, MaxVramStreamsTheDitInSegments) {
    std::vector<std::string> args =
        request({"--backend", "all=RPC0,te=CPU", "--auto-fit", "--fit-dry-run"});
    args.erase(std::find(args.begin(), args.end(), "-v"));
    RunResult dry = e2e::run_ggdiff(args, dir_ + "/dry", 300);
    ASSERT_TRUE(dry.succeeded()) << dry.describe();
    const nlohmann::json plan = nlohmann::json::parse(dry.out, nullptr, false);
    ASSERT_FALSE(plan.is_discarded()) << dry.describe();
    nlohmann::json dit;
    for (const auto& c : plan.value("components", nlohmann::json::array())) {
        if (c.value("module", "") == "diffusion") dit = c;
    }
    ASSERT_TRUE(dit.contains("params_bytes")) << plan.dump(1);
    // longcat_tiny_dit's blocks: two double blocks of about 3 MiB and two single ones of about
    // 1.5 MiB; txt_in (3.5 MiB) stays. A budget 1.5 MiB short of the whole streams the blocks.
    const double budget =
        (dit["reserve_bytes"].get<double>() + dit["params_bytes"].get<double>() - 1.5 * (1 << 20)) /
        kGiB;
    char buf[64];
    std::snprintf(buf, sizeof(buf), "RPC0=%.9f", budget);
    RunResult r =
        twin({"--backend", "all=RPC0,te=CPU,vae=CPU", "--max-vram", buf, "--stream-layers"},
             "LongCat --max-vram --stream-layers");
    const std::string log = log_of(r);
    EXPECT_TRUE(contains(log, "segments, streamed (")) << log;
    EXPECT_TRUE(split_ranges(log, "diffusion").empty()) << log;
}

}  // namespace
