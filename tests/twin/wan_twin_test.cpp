// Wan twins over two ggdiff-rpc workers (see twin_test.cpp for the pattern): the Wan DiT (30
// blocks of the 1.3B fixture) and umT5 split by layers over RPC0 and RPC1 give the frames the
// single-device run (everything on RPC0) gives, for a 5-frame video (two latent frames).
//
// The DiT fixture is 2.8 GB at the real 1.3B size: every run ships it to the workers, so the
// suite keeps to one split run and one cached single-device reference, of 2 steps.
#include <gtest/gtest.h>

#include "../golden/wan_e2e.h"
#include "twin_support.h"

namespace {

namespace e2e = ggdiff::e2e;
namespace wan = ggdiff::e2e::wan;
using e2e::RunResult;
using namespace ggdiff::twin;

constexpr int kDitBlocks = 30;
constexpr int kUmt5Blocks = 2;

class WanTwin : public TwoWorkers {
  protected:
    void SetUp() override {
        ASSERT_TRUE(wan::prerequisites_ok());
        TwoWorkers::SetUp();
    }

    static std::vector<std::string> case_args() {
        return {"-p",
                "a photograph of an astronaut riding a horse",
                "-W",
                "64",
                "-H",
                "64",
                "--video-frames",
                "5",
                "--steps",
                "2",
                "--cfg-scale",
                "1",
                "-s",
                "42"};
    }

    RunResult generate(const std::vector<std::string>& extra, const std::string& out,
                       const std::string& log_dir) const {
        std::vector<std::string> args = wan::model_args();
        for (const std::string& a : case_args()) args.push_back(a);
        args.insert(args.end(), {"--rpc-servers", servers(), "-v"});
        args.insert(args.end(), extra.begin(), extra.end());
        args.insert(args.end(), {"-o", out});
        return e2e::run_ggdiff(args, log_dir, 900);
    }

    // The 5 frames with everything on RPC0, made once per build of the binaries.
    std::vector<std::string> single_device() const {
        const std::vector<std::string> extra = {"--backend", "RPC0"};
        const std::string key = join(extra, " ") + "|" + join(case_args(), " ") + "|" +
                                file_stamp(wan::dit()) + "|" + file_stamp(wan::umt5()) + "|" +
                                file_stamp(wan::vae());
        return cached_batch("wan_references", key, 5, [&](const std::string& path) {
            return generate(extra, path, dir_ + "/reference");
        });
    }
};

// Both graphs cross the devices; every frame is the one-device frame.
TEST_F(WanTwin, DitAndUmt5LayerSplit) {
    const std::vector<std::string> reference = single_device();
    ASSERT_EQ(reference.size(), 5u);
    const std::string out = dir_ + "/twin.png";
    RunResult r = generate({"--backend", "all=RPC0,diffusion=RPC0&RPC1,te=RPC0&RPC1"}, out, dir_);
    for (int i : {0, 2, 4}) {
        expect_same_image(r, batch_name(out, i), reference[static_cast<size_t>(i)],
                          wan::tolerance(), "wan DiT and umT5 layer split");
    }
    const std::string log = log_of(r);
    expect_ranges(log, "diffusion", {"RPC0", "RPC1"}, kDitBlocks);
    expect_ranges(log, "te", {"RPC0", "RPC1"}, kUmt5Blocks, /*first_may_be_empty=*/true);
    EXPECT_GE(max_splits(log, "DiT"), 2) << "the DiT ran on one device only\n" << log;
    EXPECT_GE(max_splits(log, "T5"), 2) << "umT5 ran on one device only\n" << log;
}

}  // namespace
