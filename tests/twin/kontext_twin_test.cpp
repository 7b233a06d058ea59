// FLUX.1 Kontext twins over two ggdiff-rpc workers (see twin_test.cpp for the pattern): with
// reference images joining the DiT's sequence, the DiT split over its double and single blocks
// and T5 split over its blocks (two references), a batch of two on two data-parallel replicas
// (both items edit with the same reference latents) and a --max-vram budget that cuts the
// DiT into streamed segments each give the single-device image of the kontext_tiny golden
// case, and so its golden image.
//
// The single-device references (everything on RPC0) are made once per build of the binaries
// (cached_image); the data-parallel batch is compared with the golden batch, made on one device.
#include <gtest/gtest.h>

#include "../golden/kontext_e2e.h"
#include "twin_support.h"

namespace {

namespace fs = std::filesystem;
namespace e2e = ggdiff::e2e;
namespace kontext = ggdiff::e2e::kontext;
using e2e::contains;
using e2e::RunResult;
using namespace ggdiff::twin;

constexpr int kDitBlocks = 4;  // kontext_tiny: 2 double + 2 single blocks
constexpr int kT5Blocks = 2;   // flux_tiny_t5: 2 blocks
constexpr const char* kOneRef = "kontext_ref1";
constexpr const char* kTwoRefs = "kontext_ref2";
constexpr const char* kBatch = "kontext_batch2";
constexpr const char* kDit = "FLUX DiT";  // the DiT's runner label in -v logs

class KontextTwin : public TwoWorkers {
  protected:
    void SetUp() override {
        ASSERT_TRUE(kontext::prerequisites_ok());
        for (const char* id : {kOneRef, kTwoRefs, kBatch})
            ASSERT_FALSE(kontext::case_args(id).empty()) << "no case " << id;
        TwoWorkers::SetUp();
    }

    std::vector<std::string> request(const std::string& id,
                                     const std::vector<std::string>& extra) const {
        std::vector<std::string> args = kontext::model_args();
        for (const std::string& a : kontext::case_args(id)) args.push_back(a);
        args.insert(args.end(), {"--rpc-servers", servers(), "-v"});
        args.insert(args.end(), extra.begin(), extra.end());
        return args;
    }

    RunResult generate(const std::string& id, const std::vector<std::string>& extra,
                       const std::string& out, const std::string& log_dir) const {
        std::vector<std::string> args = request(id, extra);
        args.insert(args.end(), {"-o", out});
        return e2e::run_ggdiff(args, log_dir, 600);
    }

    // Case `id` with everything on RPC0, made once per build of the binaries.
    std::string single_device(const std::string& id) const {
        const std::vector<std::string> extra = {"--backend", "RPC0"};
        const std::string key = join(extra, " ") + "|" + join(kontext::case_args(id), " ") + "|" +
                                file_stamp(kontext::dit()) + "|" + file_stamp(kontext::t5()) + "|" +
                                file_stamp(kontext::vae());
        return cached_image("kontext_references", key, [&](const std::string& path) {
            return generate(id, extra, path, dir_ + "/reference");
        });
    }

    // Case `id` placed by `extra`: its image must be the single-device one and the golden one.
    RunResult twin(const std::string& id, const std::vector<std::string>& extra, const char* what) {
        const std::string reference = single_device(id);
        const std::string out = dir_ + "/twin.png";
        RunResult r = generate(id, extra, out, dir_);
        expect_same_image(r, out, reference, kontext::tolerance(), what);
        const std::vector<std::string> golden = kontext::case_outputs(id);
        if (r.succeeded() && !golden.empty()) {
            const e2e::ImageDiff g = e2e::compare_images(out, golden.front());
            EXPECT_TRUE(g.ok) << g.error;
            EXPECT_LE(g.mean_abs, kontext::tolerance()) << what << " against the golden image";
        }
        return r;
    }
};

TEST_F(KontextTwin, SingleDeviceMatchesGolden) {
    const std::string ref = single_device(kTwoRefs);
    ASSERT_FALSE(ref.empty());
    const std::vector<std::string> golden = kontext::case_outputs(kTwoRefs);
    ASSERT_EQ(golden.size(), 1u);
    const auto d = e2e::compare_images(ref, golden.front());
    ASSERT_TRUE(d.ok) << d.error;
    EXPECT_LE(d.mean_abs, kontext::tolerance()) << "max " << d.max_abs;
}

// Two references (index 1, the second one offset) under a layer split of the DiT and of T5:
// both graphs cross the devices and the image is the one-device one. T5's token embedding
// outweighs its two narrow blocks, so its first device may hold no block.
TEST_F(KontextTwin, DitAndT5LayerSplitWithTwoReferences) {
    const std::string args = join(kontext::case_args(kTwoRefs), " ");
    ASSERT_TRUE(contains(args, "-r " + kontext::ref_shapes())) << args;
    ASSERT_TRUE(contains(args, "-r " + kontext::ref_stripes())) << args;
    RunResult r = twin(kTwoRefs, {"--backend", "all=RPC0,diffusion=RPC0&RPC1,te=RPC0&RPC1"},
                       "kontext two references under layer split");
    const std::string log = log_of(r);
    expect_ranges(log, "diffusion", {"RPC0", "RPC1"}, kDitBlocks);
    expect_ranges(log, "te", {"RPC0", "RPC1"}, kT5Blocks, /*first_may_be_empty=*/true);
    EXPECT_GE(max_splits(log, kDit), 2) << "the DiT ran on one device only\n" << log;
    EXPECT_GE(max_splits(log, "T5"), 2) << "T5 ran on one device only\n" << log;
}

// A batch of two on two replicas gives the golden batch kontext_batch2 (made on one device), in
// order, each replica's DiT on its worker: both items see the same reference latents.
TEST_F(KontextTwin, BatchOnTwoDataParallelReplicas) {
    std::vector<std::string> args = kontext::model_args();
    for (const std::string& a : kontext::case_args(kBatch)) args.push_back(a);
    ASSERT_TRUE(contains(join(args, " "), "-b 2"));
    ASSERT_TRUE(contains(join(args, " "), "-r " + kontext::ref_stripes()));
    const std::string out = dir_ + "/dp.png";
    args.insert(args.end(),
                {"--rpc-servers", servers(), "-v", "--backend", "all=RPC0|RPC1", "-o", out});
    const RunResult r = e2e::run_ggdiff(args, dir_, 600);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    const std::string log = log_of(r);
    EXPECT_TRUE(contains(log, "data parallel: 2 replicas (RPC0, RPC1); items 0 on RPC0, 1 on RPC1"))
        << log;
    EXPECT_TRUE(contains(log, std::string(kDit) + ": computes on RPC0")) << log;
    EXPECT_TRUE(contains(log, std::string(kDit) + ": computes on RPC1")) << log;
    const std::vector<std::string> golden = kontext::case_outputs(kBatch);
    ASSERT_EQ(golden.size(), 2u);
    for (int i = 0; i < 2; ++i) {
        const std::string what = "data parallel image " + std::to_string(i) + " vs golden";
        expect_same_image(r, batch_name(out, i), golden[static_cast<size_t>(i)],
                          kontext::tolerance(), what.c_str());
    }
}

// A --max-vram budget on RPC0 that holds the DiT's compute buffer with one reference (about
// 4.4 MiB at 64x64), its non-block weights and about two of its blocks but not all 14 MiB of
// weights: its blocks run as segments, streamed (--stream-layers). T5 runs on RPC1 (no budget
// there), the VAE on the CPU.
TEST_F(KontextTwin, MaxVramStreamsTheDitInSegmentsWithAReference) {
    RunResult r = twin(
        kOneRef,
        {"--backend", "all=RPC0,te=RPC1,vae=CPU", "--max-vram", "RPC0=0.018", "--stream-layers"},
        "kontext --max-vram --stream-layers");
    const std::string log = log_of(r);
    EXPECT_TRUE(contains(log, "--max-vram budget 18.4 MiB on RPC0")) << log;
    expect_segments(log, "diffusion", kDitBlocks, 2);
    EXPECT_TRUE(contains(log, "segments, streamed (")) << log;
    EXPECT_TRUE(segment_lines(log, "te").empty()) << log;
    EXPECT_TRUE(split_ranges(log, "diffusion").empty()) << log;
}

}  // namespace
