// Twins over two ggdiff-rpc workers (TESTING.md, "Twin") for HiDream-O1-Image, on the tiny
// fixture (tests/fixtures/hidream_o1_tiny.tensors): its language model, which is the DiT, split
// by layers over RPC0 and RPC1, and streamed in segments under a --max-vram budget, gives the
// one-device image. (The prompt's token embeddings are read on the host: nothing else runs
// before the DiT, and there is no VAE.)
#include <gtest/gtest.h>

#include <regex>

#include "../golden/e2e_support.h"
#include "twin_support.h"

namespace {

namespace fs = std::filesystem;
namespace e2e = ggdiff::e2e;
using e2e::contains;
using e2e::RunResult;
using namespace ggdiff::twin;

constexpr int kLayers = 4;  // hidream_o1_tiny
constexpr double kSameImage = 0.5;

class HiDreamO1Twin : public TwoWorkers {
  protected:
    void SetUp() override {
        for (const std::string& f : {e2e::binary_path(), model()}) {
            ASSERT_TRUE(fs::is_regular_file(f))
                << "missing " << f << " (run through ctest: its fixture tests make the files)";
        }
        TwoWorkers::SetUp();
    }
    static std::string model() { return e2e::built_fixture("hidream_o1_tiny"); }

    std::vector<std::string> request(const std::vector<std::string>& extra) const {
        std::vector<std::string> args = {"-m",
                                         model(),
                                         "--llm-tokenizer",
                                         e2e::shared_dir() + "/data/qwen2_synthetic",
                                         "-p",
                                         "a lovely cat",
                                         "-n",
                                         "blurry",
                                         "--cfg-scale",
                                         "3",
                                         "-W",
                                         "96",
                                         "-H",
                                         "64",
                                         "--steps",
                                         "3",
                                         "-s",
                                         "4",
                                         "--rpc-servers",
                                         servers(),
                                         "-v"};
        args.insert(args.end(), extra.begin(), extra.end());
        return args;
    }
    RunResult generate(const std::vector<std::string>& extra, const std::string& out,
                       const std::string& log_dir) const {
        std::vector<std::string> args = request(extra);
        args.insert(args.end(), {"-o", out});
        return e2e::run_ggdiff(args, log_dir, 600);
    }
    std::string single_device() const {
        const std::vector<std::string> extra = {"--backend", "all=RPC0"};
        return cached_image(
            "hidream_o1_references", join(extra, " ") + "|" + file_stamp(model()),
            [&](const std::string& path) { return generate(extra, path, dir_ + "/reference"); });
    }
    RunResult twin(const std::vector<std::string>& extra, const char* what) {
        const std::string reference = single_device();
        const std::string out = dir_ + "/twin.png";
        RunResult r = generate(extra, out, dir_);
        expect_same_image(r, out, reference, kSameImage, what);
        return r;
    }
};

TEST_F(HiDreamO1Twin, LanguageModelLayerSplit) {
    RunResult r =
        twin({"--backend", "all=RPC0,diffusion=RPC0&RPC1", "--split-mode", "diffusion=layer"},
             "DiT layer split");
    const std::string log = log_of(r);
    expect_ranges(log, "diffusion", {"RPC0", "RPC1"}, kLayers, /*first_may_be_empty=*/true);
    EXPECT_GE(max_splits(log, "HiDream-O1 DiT"), 2) << "the DiT ran on one device only\n" << log;
}

// A --max-vram budget on RPC0 a little short of the DiT's weights (the dry run's compute reserve
// plus the weights the DiT loads, as its log says: the plan's parameter bytes also count the
// token table, read on the host, and would leave room for everything): its layers run as
// streamed segments, and the image is the same.
TEST_F(HiDreamO1Twin, MaxVramStreamsTheDitInSegments) {
    const std::string probe_png = dir_ + "/probe.png";
    RunResult probe =
        generate({"--backend", "all=RPC0", "--steps", "1"}, probe_png, dir_ + "/probe");
    ASSERT_TRUE(probe.succeeded()) << probe.describe();
    std::smatch m;
    const std::string probe_log = log_of(probe);
    ASSERT_TRUE(std::regex_search(probe_log, m,
                                  std::regex(R"(HiDream-O1 DiT: \d+ weights, ([0-9.]+) MiB)")))
        << probe_log;
    const double weights = std::stod(m[1].str()) * (1 << 20);
    const nlohmann::json dit = planned_component(
        request({"--backend", "all=RPC0", "--auto-fit", "--fit-dry-run"}), dir_ + "/dry");
    ASSERT_TRUE(dit.contains("reserve_bytes")) << dit;
    // One tiny layer is about 1.1 MiB: a budget 1.2 MiB short of the whole streams them.
    const std::string budget = vram_budget("RPC0", dit, weights - 1.2 * (1 << 20));
    RunResult r = twin({"--backend", "all=RPC0", "--max-vram", budget, "--stream-layers"},
                       "--max-vram --stream-layers");
    const std::string log = log_of(r);
    EXPECT_TRUE(contains(log, "segments, streamed (")) << log;
}

}  // namespace
