// PuLID-FLUX twins over two ggdiff-rpc workers (see twin_test.cpp for the pattern): the FLUX DiT
// with its PuLID modules on one worker gives the pulid_tiny golden image, and split over both
// workers (the modules are no blocks: they stay with the DiT's first range) or cut into segments
// by a --max-vram budget it gives the one-device image.
#include <gtest/gtest.h>

#include "../golden/pulid_e2e.h"
#include "twin_support.h"

namespace {

namespace e2e = ggdiff::e2e;
namespace pulid = ggdiff::e2e::pulid;
using e2e::contains;
using e2e::RunResult;
using namespace ggdiff::twin;

constexpr int kDitBlocks = 4;  // flux_tiny: 2 double + 2 single blocks

class PulidTwin : public TwoWorkers {
  protected:
    void SetUp() override {
        ASSERT_TRUE(pulid::prerequisites_ok());
        ASSERT_FALSE(pulid::case_args("pulid_euler").empty());
        TwoWorkers::SetUp();
    }

    RunResult generate(const std::vector<std::string>& extra, const std::string& out,
                       const std::string& log_dir) const {
        std::vector<std::string> args = pulid::model_args();
        args.insert(args.end(), {"--pulid-id-embedding", pulid::identity()});
        for (const std::string& a : pulid::case_args("pulid_euler")) args.push_back(a);
        args.insert(args.end(), {"--rpc-servers", servers(), "-v"});
        args.insert(args.end(), extra.begin(), extra.end());
        args.insert(args.end(), {"-o", out});
        return e2e::run_ggdiff(args, log_dir, 400);
    }

    std::string single_device() const {
        const std::string key = "all=CPU,diffusion=RPC0|" + file_stamp(pulid::weights());
        return cached_image("pulid_references", key, [&](const std::string& path) {
            return generate({"--backend", "all=CPU,diffusion=RPC0"}, path, dir_ + "/reference");
        });
    }

    RunResult twin(const std::vector<std::string>& extra) {
        const std::string out = dir_ + "/twin.png";
        RunResult r = generate(extra, out, dir_);
        expect_same_image(r, out, single_device(), pulid::tolerance());
        return r;
    }
};

TEST_F(PulidTwin, SingleDeviceMatchesGolden) {
    const std::string ref = single_device();
    ASSERT_FALSE(ref.empty());
    const auto d = e2e::compare_images(ref, pulid::golden("pulid_euler.png"));
    ASSERT_TRUE(d.ok) << d.error;
    EXPECT_LE(d.mean_abs, pulid::tolerance()) << "max " << d.max_abs;
}

TEST_F(PulidTwin, DitLayerSplitWithPulid) {
    RunResult r = twin({"--backend", "all=CPU,diffusion=RPC0&RPC1"});
    const std::string log = log_of(r);
    // The modules (36 MiB, no blocks) stay on the first device, which then has no room for
    // blocks of this tiny DiT (14 MiB): they all go to RPC1.
    expect_ranges(log, "diffusion", {"RPC0", "RPC1"}, kDitBlocks, /*first_may_be_empty=*/true);
    EXPECT_GE(max_splits(log, "FLUX DiT"), 2) << "the DiT ran on one device only\n" << log;
}

// A budget that holds the weights outside the blocks (the PuLID modules, 36 MiB, among them)
// and about one of the DiT's blocks (14 MiB in all): the graph is cut into segments that run
// one after the other.
TEST_F(PulidTwin, MaxVramCutsTheDitWithPulid) {
    RunResult r = twin({"--backend", "all=CPU,diffusion=RPC0", "--max-vram", "RPC0=0.047"});
    EXPECT_TRUE(contains(log_of(r), "diffusion segment 1")) << log_of(r);
}

}  // namespace
