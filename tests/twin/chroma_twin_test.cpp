// Chroma twins over two ggdiff-rpc workers (see twin_test.cpp for the pattern): the DiT (its
// double and single blocks, the approximator on the first device) and T5 split by layers over
// RPC0 and RPC1, an --auto-fit plan under budgets that hold the DiT only split, a --max-vram
// budget that streams the DiT in segments, and a batch of two on two data-parallel replicas each
// give the single-device images of the chroma_tiny golden case chroma_euler (at one step).
//
// The chroma_tiny DiT is about 520 MB (the approximator is 5120 wide): every run ships its
// weights to the workers, so the suite keeps to few runs. The single-device reference
// (everything on RPC0) is made once per build of the binaries (cached_image).
#include <gtest/gtest.h>

#include "../golden/chroma_e2e.h"
#include "twin_support.h"

namespace {

namespace fs = std::filesystem;
namespace e2e = ggdiff::e2e;
namespace chroma = ggdiff::e2e::chroma;
using e2e::contains;
using e2e::RunResult;
using namespace ggdiff::twin;

constexpr int kDitBlocks = 4;  // chroma_tiny: 2 double + 2 single blocks
constexpr int kT5Blocks = 2;   // flux_tiny_t5: 2 blocks
constexpr const char* kCase = "chroma_euler";
// One step of the case: each step evaluates the 5120-wide approximator (about 180 GFLOP on 344
// rows) and every run ships its 503 MiB to the workers, so the twins run one step (their
// single-device reference too; the golden tests check the four-step image).
constexpr const char* kSteps = "1";
constexpr uint64_t kGiB = 1ull << 30;

class ChromaTwin : public TwoWorkers {
  protected:
    void SetUp() override {
        ASSERT_TRUE(chroma::prerequisites_ok());
        ASSERT_FALSE(chroma::case_args(kCase).empty()) << "no case " << kCase;
        TwoWorkers::SetUp();
    }

    std::vector<std::string> request(const std::vector<std::string>& extra) const {
        std::vector<std::string> args = chroma::model_args();
        for (const std::string& a : chroma::case_args(kCase)) args.push_back(a);
        args.insert(args.end(), {"--steps", kSteps, "--rpc-servers", servers(), "-v"});
        args.insert(args.end(), extra.begin(), extra.end());
        return args;
    }

    RunResult generate(const std::vector<std::string>& extra, const std::string& out,
                       const std::string& log_dir) const {
        std::vector<std::string> args = request(extra);
        args.insert(args.end(), {"-o", out});
        return e2e::run_ggdiff(args, log_dir, 600);
    }

    // The case with everything on RPC0, made once per build of the binaries.
    std::string single_device() const {
        const std::vector<std::string> extra = {"--backend", "RPC0"};
        const std::string key = join(extra, " ") + "|" + join(chroma::case_args(kCase), " ") +
                                " --steps " + kSteps + "|" + file_stamp(chroma::dit()) + "|" +
                                file_stamp(chroma::t5()) + "|" + file_stamp(chroma::vae());
        return cached_image("chroma_references", key, [&](const std::string& path) {
            return generate(extra, path, dir_ + "/reference");
        });
    }

    // The --auto-fit --fit-dry-run plan of the case with `extra` (JSON on stdout).
    nlohmann::json dry_run(const std::vector<std::string>& extra) const {
        std::vector<std::string> args = request({"--auto-fit", "--fit-dry-run"});
        args.erase(std::find(args.begin(), args.end(), "-v"));
        args.insert(args.end(), extra.begin(), extra.end());
        RunResult r = e2e::run_ggdiff(args, dir_ + "/dry", 300);
        EXPECT_TRUE(r.succeeded()) << r.describe();
        try {
            return nlohmann::json::parse(r.out);
        } catch (const std::exception& e) {
            ADD_FAILURE() << "--fit-dry-run did not print JSON: " << e.what() << "\n"
                          << r.describe();
            return nlohmann::json::object();
        }
    }

    static nlohmann::json component(const nlohmann::json& plan, const std::string& module) {
        for (const auto& c : plan.value("components", nlohmann::json::array())) {
            if (c.value("module", "") == module) return c;
        }
        return nlohmann::json::object();
    }

    // The case placed by `extra`: its image must be the single-device one.
    RunResult twin(const std::vector<std::string>& extra, const char* what) {
        const std::string reference = single_device();
        const std::string out = dir_ + "/twin.png";
        RunResult r = generate(extra, out, dir_);
        expect_same_image(r, out, reference, chroma::tolerance(), what);
        return r;
    }
};

// The DiT and T5 split by layers: both graphs cross the devices and the image is the
// one-device one. Non-block weights stay on the first device, and the DiT's approximator (503
// MiB) outweighs its share of the two equal workers: all four blocks go to RPC1 and the DiT's
// graph runs its approximator on RPC0, its blocks on RPC1. T5's token embedding likewise
// outweighs its two narrow blocks.
TEST_F(ChromaTwin, DitAndT5LayerSplit) {
    RunResult r = twin({"--backend", "all=RPC0,diffusion=RPC0&RPC1,te=RPC0&RPC1"},
                       "chroma DiT and T5 layer split");
    const std::string log = log_of(r);
    expect_ranges(log, "diffusion", {"RPC0", "RPC1"}, kDitBlocks, /*first_may_be_empty=*/true);
    expect_ranges(log, "te", {"RPC0", "RPC1"}, kT5Blocks, /*first_may_be_empty=*/true);
    EXPECT_GE(max_splits(log, "Chroma DiT"), 2) << "the DiT ran on one device only\n" << log;
    EXPECT_GE(max_splits(log, "T5"), 2) << "T5 ran on one device only\n" << log;
}

// --auto-fit under --max-vram budgets that hold the DiT only when it is split over both workers
// (RPC1 70% of its weights above its reserve, RPC0 55%): the plan splits it, and the image is
// the single-device one.
TEST_F(ChromaTwin, AutoFitSplitsTheDit) {
    const nlohmann::json sizes = dry_run({});
    const nlohmann::json dit = component(sizes, "diffusion");
    ASSERT_TRUE(dit.contains("params_bytes")) << sizes.dump(1);
    EXPECT_TRUE(dit.value("splittable", false)) << sizes.dump(1);
    EXPECT_TRUE(component(sizes, "te").value("splittable", false)) << sizes.dump(1);
    const uint64_t params = dit["params_bytes"].get<uint64_t>();
    const uint64_t reserve = dit["reserve_bytes"].get<uint64_t>();
    EXPECT_GT(params, 400ull << 20) << "the approximator alone is over 500 MB";

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
    EXPECT_EQ(d.value("targets", nlohmann::json::array()).size(), 2u);

    RunResult r = twin({"--auto-fit", "--max-vram", budgets}, "chroma --auto-fit");
    const std::string log = log_of(r);
    EXPECT_EQ(split_ranges(log, "diffusion").size(), 2u) << log;
}

// A --max-vram budget on RPC0 (from the dry run's sizes) below the DiT's weights: its blocks run as
// streamed segments
// (--stream-layers); T5 on RPC1, the VAE on the CPU.
TEST_F(ChromaTwin, MaxVramStreamsTheDitInSegments) {
    const nlohmann::json dit = component(dry_run({}), "diffusion");
    ASSERT_TRUE(dit.contains("params_bytes")) << dit.dump(1);
    // The blocks are 9 MiB of the DiT's weights (two double blocks of 3 MiB, two single ones of
    // 1.5 MiB; the approximator, kept, is 503 MiB). A budget 1.5 MiB short of the whole leaves
    // about 7.5 MiB for blocks, and --stream-layers keeps two segments: segments of up to 3.75
    // MiB, each double block alone, then both single blocks.
    const double budget =
        (dit["reserve_bytes"].get<double>() + dit["params_bytes"].get<double>() - 1.5 * (1 << 20)) /
        kGiB;
    char buf[64];
    std::snprintf(buf, sizeof(buf), "RPC0=%.9f", budget);
    RunResult r =
        twin({"--backend", "all=RPC0,te=RPC1,vae=CPU", "--max-vram", buf, "--stream-layers"},
             "chroma --max-vram --stream-layers");
    const std::string log = log_of(r);
    expect_segments(log, "diffusion", kDitBlocks, 2);
    EXPECT_TRUE(contains(log, "segments, streamed (")) << log;
    EXPECT_TRUE(split_ranges(log, "diffusion").empty()) << log;
}

// A batch of two on two replicas: item 0 on RPC0 is the single-device seed-42 image, item 1 on
// RPC1 the single-device seed-43 one (made on the CPU).
TEST_F(ChromaTwin, BatchOnTwoDataParallelReplicas) {
    const std::string out = dir_ + "/dp.png";
    RunResult r = generate({"-b", "2", "--backend", "all=RPC0|RPC1"}, out, dir_);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    const std::string log = log_of(r);
    EXPECT_TRUE(contains(log, "data parallel: 2 replicas (RPC0, RPC1); items 0 on RPC0, 1 on RPC1"))
        << log;
    expect_same_image(r, out, single_device(), chroma::tolerance(), "data parallel item 0");
    const std::string ref43 = dir_ + "/s43.png";
    // On the CPU, one device as well, without shipping the DiT to a worker once more.
    std::vector<std::string> args = request({"--backend", "CPU", "-s", "43", "-o", ref43});
    RunResult s = e2e::run_ggdiff(args, dir_ + "/reference", 600);
    ASSERT_TRUE(s.succeeded()) << s.describe();
    expect_same_image(r, batch_name(out, 1), ref43, chroma::tolerance(), "data parallel item 1");
    EXPECT_GT(e2e::compare_images(out, batch_name(out, 1)).mean_abs, 3.0)
        << "both replicas made the same image";
}

}  // namespace
