// FLUX.2 klein twins over two ggdiff-rpc workers (see twin_test.cpp for the pattern): the DiT
// split over its double and single blocks and the Qwen3 text model over its 27 layers, --auto-
// fit's plan, a batch on two data-parallel replicas, a --max-vram budget that cuts the DiT into
// streamed segments, and the edit case (a reference image joins the DiT's sequence) under a
// layer split each give the single-device image of the flux2_tiny golden case (and so its
// golden image).
//
// The single-device references (everything on RPC0) are made once per build of the binaries
// (cached_image); the data-parallel batch is compared with the golden batch, made on one device.
#include <gtest/gtest.h>

#include <map>

#include "../golden/flux2_e2e.h"
#include "twin_support.h"

namespace {

namespace fs = std::filesystem;
namespace e2e = ggdiff::e2e;
namespace flux2 = ggdiff::e2e::flux2;
using e2e::contains;
using e2e::RunResult;
using namespace ggdiff::twin;

constexpr int kDitBlocks = 4;   // flux2_tiny: 2 double + 2 single blocks
constexpr int kLlmLayers = 27;  // the fixture's Qwen3: 27 layers (klein reads 9, 18 and 27)
constexpr const char* kCase = "flux2_default";
constexpr const char* kEditCase = "flux2_edit";
constexpr const char* kDit = "FLUX.2 DiT";  // the DiT's runner label in -v logs
constexpr const char* kLlm = "LLM";         // the text model's

class Flux2Twin : public TwoWorkers {
  protected:
    void SetUp() override {
        ASSERT_TRUE(flux2::prerequisites_ok());
        ASSERT_FALSE(flux2::case_args(kCase).empty());
        ASSERT_FALSE(flux2::case_args(kEditCase).empty());
        TwoWorkers::SetUp();
    }

    std::vector<std::string> request(const std::string& id,
                                     const std::vector<std::string>& extra) const {
        std::vector<std::string> args = flux2::model_args();
        for (const std::string& a : flux2::case_args(id)) args.push_back(a);
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
        const std::string key = join(extra, " ") + "|" + join(flux2::case_args(id), " ") + "|" +
                                file_stamp(flux2::dit()) + "|" + file_stamp(flux2::llm()) + "|" +
                                file_stamp(flux2::vae());
        return cached_image("flux2_references", key, [&](const std::string& path) {
            return generate(id, extra, path, dir_ + "/reference");
        });
    }

    // Case `id` placed by `extra`: its image must be the single-device one and the golden one.
    RunResult twin(const std::string& id, const std::vector<std::string>& extra, const char* what) {
        const std::string reference = single_device(id);
        const std::string out = dir_ + "/twin.png";
        RunResult r = generate(id, extra, out, dir_);
        expect_same_image(r, out, reference, flux2::tolerance(), what);
        const std::vector<std::string> golden = flux2::case_outputs(id);
        if (r.succeeded() && !golden.empty()) {
            const e2e::ImageDiff g = e2e::compare_images(out, golden.front());
            EXPECT_TRUE(g.ok) << g.error;
            EXPECT_LE(g.mean_abs, flux2::tolerance()) << what << " against the golden image";
        }
        return r;
    }

    // The DiT's blocks and the LLM's layers each split over RPC0 then RPC1, both graphs
    // crossing the devices.
    static void expect_dit_and_llm_split(const std::string& log) {
        expect_ranges(log, "diffusion", {"RPC0", "RPC1"}, kDitBlocks);
        expect_ranges(log, "te", {"RPC0", "RPC1"}, kLlmLayers);
        EXPECT_GE(max_splits(log, kDit), 2) << "the DiT ran on one device only\n" << log;
        EXPECT_GE(max_splits(log, kLlm), 2) << "the LLM ran on one device only\n" << log;
    }
};

TEST_F(Flux2Twin, SingleDeviceMatchesGolden) {
    const std::string ref = single_device(kCase);
    ASSERT_FALSE(ref.empty());
    const auto d = e2e::compare_images(ref, flux2::golden("flux2_default.png"));
    ASSERT_TRUE(d.ok) << d.error;
    EXPECT_LE(d.mean_abs, flux2::tolerance()) << "max " << d.max_abs;
}

TEST_F(Flux2Twin, DitAndLlmLayerSplit) {
    RunResult r = twin(kCase, {"--backend", "all=RPC0,diffusion=RPC0&RPC1,te=RPC0&RPC1"},
                       "flux2 layer split");
    expect_dit_and_llm_split(log_of(r));
}

TEST_F(Flux2Twin, AutoFitPlansTheDitAndLlmAsSplittable) {
    RunResult r =
        e2e::run_ggdiff(request(kCase, {"--auto-fit", "--fit-dry-run"}), dir_ + "/dry", 300);
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
    ASSERT_EQ(by_module.count("vae"), 1u);
    EXPECT_TRUE(by_module["diffusion"].value("splittable", false));
    EXPECT_TRUE(by_module["te"].value("splittable", false));
    EXPECT_FALSE(by_module["vae"].value("splittable", true));
    // The DiT's weights are about 12 MiB, the LLM's about 70 MiB.
    EXPECT_GT(by_module["diffusion"].value("params_bytes", uint64_t{0}), 8ull << 20);
    EXPECT_GT(by_module["te"].value("params_bytes", uint64_t{0}), 40ull << 20);
}

// A batch of two on two replicas gives the golden batch flux2_batch2 (made on one device), in
// order, each replica's DiT on its worker.
TEST_F(Flux2Twin, BatchOnTwoDataParallelReplicas) {
    std::vector<std::string> args = flux2::model_args();
    for (const std::string& a : flux2::case_args("flux2_batch2")) args.push_back(a);
    ASSERT_TRUE(contains(join(args, " "), "-b 2"));
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
    const std::vector<std::string> golden = flux2::case_outputs("flux2_batch2");
    ASSERT_EQ(golden.size(), 2u);
    for (int i = 0; i < 2; ++i) {
        const std::string what = "data parallel image " + std::to_string(i) + " vs golden";
        expect_same_image(r, batch_name(out, i), golden[static_cast<size_t>(i)], flux2::tolerance(),
                          what.c_str());
    }
}

// A --max-vram budget on RPC0 that holds the DiT's compute buffer (about 11 MiB at 64x64), its
// non-block weights and two of its blocks but not all 12 MiB of weights: its blocks run as
// segments, streamed (--stream-layers: the next one is sent while one computes). A double
// block (3.3 MiB) is as large as the room left once two are in flight, so at this size no
// segment can stay on the device. The LLM runs on RPC1 (no budget there), the VAE on the CPU.
TEST_F(Flux2Twin, MaxVramStreamsTheDitInSegments) {
    RunResult r = twin(
        kCase,
        {"--backend", "all=RPC0,te=RPC1,vae=CPU", "--max-vram", "RPC0=0.022", "--stream-layers"},
        "flux2 --max-vram --stream-layers");
    const std::string log = log_of(r);
    EXPECT_TRUE(contains(log, "--max-vram budget 22.5 MiB on RPC0")) << log;
    expect_segments(log, "diffusion", kDitBlocks, 2);
    EXPECT_TRUE(contains(log, "segments, streamed (")) << log;
    EXPECT_TRUE(segment_lines(log, "te").empty()) << log;
    EXPECT_TRUE(split_ranges(log, "diffusion").empty()) << log;
}

// The edit case: the reference image, encoded by the VAE, joins the DiT's sequence as extra
// tokens; split over both workers the DiT and the LLM still give the one-device image.
TEST_F(Flux2Twin, EditWithReferenceImageUnderLayerSplit) {
    const std::string args = join(flux2::case_args(kEditCase), " ");
    ASSERT_TRUE(contains(args, "-r " + flux2::ref_image())) << args;
    RunResult r = twin(kEditCase, {"--backend", "all=RPC0,diffusion=RPC0&RPC1,te=RPC0&RPC1"},
                       "flux2 edit under layer split");
    expect_dit_and_llm_split(log_of(r));
}

}  // namespace
