// SD3 twins over two ggdiff-rpc workers (see twin_test.cpp for the pattern): the MMDiT's joint
// blocks and the text encoders (bigG and T5 take the te split, CLIP-L stays on the first
// device) split across RPC0 and RPC1, --auto-fit's plan, a batch on two data-parallel replicas
// and a --max-vram budget that cuts the MMDiT into streamed segments each give the
// single-device image of the sd3_tiny golden case (and so its golden image).
//
// Cost: the full-size bigG text tower (1.3 GiB) is what an SD3 run spends its time on; on a
// one-thread worker it takes a minute. So only the text encoders' split runs them on the
// workers; elsewhere the text module stays on the CPU (`te=CPU`: the same CPU kernels, so the
// same image), and the single-device reference (everything else on RPC0) is made once per build
// of the binaries (cached_image). The data-parallel batch is compared with the golden batch.
#include <gtest/gtest.h>

#include "../golden/sd3_e2e.h"
#include "twin_support.h"

namespace {

namespace fs = std::filesystem;
namespace e2e = ggdiff::e2e;
namespace sd3 = ggdiff::e2e::sd3;
using e2e::contains;
using e2e::RunResult;
using namespace ggdiff::twin;

constexpr int kJointBlocks = 24;  // sd3_tiny: 24 joint blocks (the reference's minimum)
constexpr int kBigGLayers = 32;   // the full-size OpenCLIP bigG text tower
constexpr int kT5Blocks = 1;      // sd3_t5_4096: one 4096-wide block
constexpr const char* kCase = "sd3_euler";

class Sd3Twin : public TwoWorkers {
  protected:
    void SetUp() override {
        ASSERT_TRUE(sd3::prerequisites_ok());
        ASSERT_FALSE(sd3::case_args(kCase).empty());
        TwoWorkers::SetUp();
    }

    std::vector<std::string> request(const std::vector<std::string>& extra) const {
        std::vector<std::string> args = sd3::model_args();
        for (const std::string& a : sd3::case_args(kCase)) args.push_back(a);
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

    std::string cache_key(const std::vector<std::string>& extra) const {
        return join(extra, " ") + "|" + join(sd3::case_args(kCase), " ") + "|" +
               file_stamp(sd3::mmdit()) + "|" + file_stamp(sd3::clip_g());
    }

    // Everything on RPC0 but the text encoders (on the CPU), made once per build of the
    // binaries.
    std::string single_device() const {
        const std::vector<std::string> extra = {"--backend", "all=RPC0,te=CPU"};
        return cached_image("sd3_references", cache_key(extra), [&](const std::string& path) {
            return generate(extra, path, dir_ + "/reference");
        });
    }

    RunResult twin(const std::vector<std::string>& extra, const std::string& reference,
                   const char* what) {
        const std::string out = dir_ + "/twin.png";
        RunResult r = generate(extra, out, dir_);
        expect_same_image(r, out, reference, sd3::tolerance(), what);
        if (r.succeeded()) {
            const e2e::ImageDiff g = e2e::compare_images(out, sd3::golden("sd3_euler.png"));
            EXPECT_TRUE(g.ok) << g.error;
            EXPECT_LE(g.mean_abs, sd3::tolerance()) << what << " against the golden image";
        }
        return r;
    }
};

TEST_F(Sd3Twin, SingleDeviceMatchesGolden) {
    const std::string ref = single_device();
    ASSERT_FALSE(ref.empty());
    const auto d = e2e::compare_images(ref, sd3::golden("sd3_euler.png"));
    ASSERT_TRUE(d.ok) << d.error;
    EXPECT_LE(d.mean_abs, sd3::tolerance()) << "max " << d.max_abs;
}

// The joint blocks split over both workers; bigG's 32 layers and T5's block take the text
// module's split, CLIP-L runs on RPC0 alone.
TEST_F(Sd3Twin, MmditAndTextEncodersLayerSplit) {
    RunResult r = twin({"--backend", "all=RPC0,diffusion=RPC0&RPC1,te=RPC0&RPC1"}, single_device(),
                       "sd3 layer split");
    const std::string log = log_of(r);
    expect_ranges(log, "diffusion", {"RPC0", "RPC1"}, kJointBlocks);
    // The text module logs one split per encoder that takes it: bigG's layers, then T5's
    // block (its token embedding alone fills RPC0's share, as FLUX's tiny T5 does).
    const std::vector<Range> te = split_ranges(log, "te");
    ASSERT_EQ(te.size(), 4u) << describe(te) << "\n" << log;
    const std::vector<std::pair<size_t, int>> encoders = {{0, kBigGLayers}, {2, kT5Blocks}};
    for (const auto& [first, blocks] : encoders) {
        EXPECT_EQ(te[first].device, "RPC0") << describe(te);
        EXPECT_EQ(te[first + 1].device, "RPC1") << describe(te);
        EXPECT_EQ(te[first].begin, 0) << describe(te);
        EXPECT_EQ(te[first].end, te[first + 1].begin) << describe(te);
        EXPECT_LT(te[first + 1].begin, te[first + 1].end) << describe(te);
        EXPECT_EQ(te[first + 1].end, blocks) << describe(te);
    }
    EXPECT_LT(te[0].begin, te[0].end) << "bigG's layers all on RPC1: " << describe(te);
    EXPECT_GE(max_splits(log, "MMDiT"), 2) << "the MMDiT ran on one device only\n" << log;
    EXPECT_GE(max_splits(log, "OpenCLIP bigG"), 2) << "bigG ran on one device only\n" << log;
    EXPECT_GE(max_splits(log, "T5"), 2) << "T5 ran on one device only\n" << log;
    EXPECT_EQ(max_splits(log, "CLIP-L"), 1) << "CLIP-L must stay on the first device\n" << log;
    EXPECT_TRUE(contains(log, "CLIP-L: computes on RPC0\n")) << log;
}

TEST_F(Sd3Twin, AutoFitPlansTheMmditAndTextEncodersAsSplittable) {
    RunResult r = e2e::run_ggdiff(request({"--auto-fit", "--fit-dry-run"}), dir_ + "/dry", 300);
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
    ASSERT_EQ(by_module.count("te"), 1u);
    EXPECT_TRUE(by_module["diffusion"].value("splittable", false));
    EXPECT_TRUE(by_module["te"].value("splittable", false));
    EXPECT_FALSE(by_module["vae"].value("splittable", true));
    EXPECT_GT(by_module["diffusion"].value("params_bytes", uint64_t{0}), 0u);
    // bigG alone is over 1.3 GiB of the text module's weights.
    EXPECT_GT(by_module["te"].value("params_bytes", uint64_t{0}), 1300ull << 20);
}

// A batch of two on two replicas (`all=RPC0|RPC1`, the text encoders on the CPU) gives the
// golden batch sd3_batch2 (made on one device), in order, each replica's MMDiT on its worker.
TEST_F(Sd3Twin, BatchOnTwoDataParallelReplicas) {
    std::vector<std::string> args = sd3::model_args();
    for (const std::string& a : sd3::case_args("sd3_batch2")) args.push_back(a);
    ASSERT_TRUE(contains(join(args, " "), "-b 2"));
    const std::string out = dir_ + "/dp.png";
    args.insert(args.end(),
                {"--rpc-servers", servers(), "-v", "--backend", "all=RPC0|RPC1,te=CPU", "-o", out});
    const RunResult r = e2e::run_ggdiff(args, dir_, 600);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    const std::string log = log_of(r);
    EXPECT_TRUE(contains(log, "data parallel: 2 replicas (RPC0, RPC1); items 0 on RPC0, 1 on RPC1"))
        << log;
    EXPECT_TRUE(contains(log, "MMDiT: computes on RPC0")) << log;
    EXPECT_TRUE(contains(log, "MMDiT: computes on RPC1")) << log;
    for (int i = 0; i < 2; ++i) {
        const std::string golden = sd3::golden("sd3_batch2_" + std::to_string(i) + ".png");
        const std::string what = "data parallel image " + std::to_string(i) + " vs golden";
        expect_same_image(r, batch_name(out, i), golden, sd3::tolerance(), what.c_str());
    }
}

// A --max-vram budget on RPC0 below the MMDiT's 64 MiB: its joint blocks run as segments,
// the leading ones kept on the device and the rest streamed (--stream-layers). The text
// encoders run on RPC1 (no budget there), the VAE on the CPU.
TEST_F(Sd3Twin, MaxVramStreamsTheMmditInSegments) {
    RunResult r = twin(
        {"--backend", "all=RPC0,te=RPC1,vae=CPU", "--max-vram", "RPC0=0.03", "--stream-layers"},
        single_device(), "sd3 --max-vram --stream-layers");
    const std::string log = log_of(r);
    expect_segments(log, "diffusion", kJointBlocks, 2);
    const auto segs = segment_lines(log, "diffusion");
    ASSERT_FALSE(segs.empty()) << log;
    EXPECT_TRUE(segs.front().kept) << "nothing kept on the device\n" << log;
    EXPECT_FALSE(segs.back().kept) << log;
    EXPECT_TRUE(contains(log, "streamed (")) << log;
    EXPECT_TRUE(segment_lines(log, "te").empty()) << log;
}

}  // namespace
