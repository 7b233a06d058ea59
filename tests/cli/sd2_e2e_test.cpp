// SD2.x end to end on a fixture made at test time: an SD2-layout checkpoint (OpenCLIP
// text encoder in the LDM layout, 1024-wide context, linear projections) is detected,
// loads, and generates with eps and v prediction (sizes: any_size_e2e_test.cpp).
#include <gtest/gtest.h>

#include "../golden/e2e_support.h"
#include "image/image_io.h"
#include "sd2_fixture.h"

namespace {

using namespace ggdiff::e2e;

TEST(Sd2, DetectsLoadsAndGenerates) {
    if (!prerequisites_ok()) GTEST_SKIP() << "fixture or python/numpy missing";
    const std::string dir = fresh_dir();
    const std::string model = sd2_fixture();
    ASSERT_FALSE(model.empty());

    RunResult info = run_ggdiff({"-M", "info", "-m", model}, dir);
    ASSERT_TRUE(info.succeeded()) << info.describe();
    EXPECT_TRUE(contains(info.out, "sd2")) << info.out;

    auto generate = [&](const std::string& prediction, const std::string& out) {
        return run_ggdiff({"-m",
                           model,
                           "--tokenizer",
                           merges_path(),
                           "-p",
                           "a lighthouse at dusk",
                           "-W",
                           "64",
                           "-H",
                           "64",
                           "--steps",
                           "2",
                           "--sampling-method",
                           "euler",
                           "-s",
                           "1",
                           "--prediction",
                           prediction,
                           "-o",
                           out},
                          dir);
    };
    RunResult v = generate("v", dir + "/v.png");
    ASSERT_TRUE(v.succeeded()) << v.describe();
    RunResult eps = generate("eps", dir + "/eps.png");
    ASSERT_TRUE(eps.succeeded()) << eps.describe();
    auto img = ggdiff::read_image(dir + "/v.png");
    ASSERT_TRUE(img.ok()) << img.status().message();
    EXPECT_EQ(img->width, 64);
    // The parameterization changes the result.
    EXPECT_GT(compare_images(dir + "/v.png", dir + "/eps.png").mean_abs, 1.0);

    RunResult bad = generate("flux_flow", dir + "/bad.png");
    EXPECT_TRUE(bad.failed_cleanly()) << bad.describe();
}

}  // namespace
