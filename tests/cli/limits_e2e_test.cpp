// Requests too large to ever write out are refused before any compute.
#include <gtest/gtest.h>

#include "../golden/e2e_support.h"

namespace {

using namespace ggdiff::e2e;

TEST(Limits, HugeSizeIsRefusedUpFront) {
    if (!prerequisites_ok()) GTEST_SKIP() << "fixture or python/numpy missing";
    const std::string dir = fresh_dir();
    std::vector<std::string> args = model_args();
    args.insert(args.end(),
                {"-p", "x", "-W", "32768", "-H", "64", "--steps", "1", "-o", dir + "/huge.png"});
    RunResult r = run_ggdiff(args, dir, 120);
    EXPECT_TRUE(r.failed_cleanly()) << r.describe();
    EXPECT_TRUE(contains(r.err, "limit")) << r.err;
    EXPECT_LT(r.seconds, 60.0);
    EXPECT_FALSE(fs::exists(dir + "/huge.png"));
}

}  // namespace

namespace {

using namespace ggdiff::e2e;

// With --type f16 on an f16 checkpoint the matrices are used in place from the mapped
// file (no copy), and the picture is still the golden one.
TEST(Memory, F16WeightsUsedInPlace) {
    if (!prerequisites_ok()) GTEST_SKIP() << "fixture or python/numpy missing";
    const std::string dir = fresh_dir();
    std::vector<std::string> args = model_args();
    args.insert(args.end(), {"-p", "a photograph of an astronaut riding a horse", "-W", "64", "-H",
                             "64", "--steps", "4", "--sampling-method", "euler", "--cfg-scale", "7",
                             "-s", "42", "--type", "f16", "-v", "-o", dir + "/f16.png"});
    RunResult r = run_ggdiff(args, dir);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    EXPECT_TRUE(contains(r.err, "used in place from the mapped checkpoint")) << r.err;
    const ImageDiff d = compare_images(dir + "/f16.png", golden_dir() + "/euler.png");
    EXPECT_LE(d.mean_abs, manifest_tolerance());
}

}  // namespace
