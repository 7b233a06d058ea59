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
