// SD2.x end to end on a fixture made at test time: an SD2-layout checkpoint (OpenCLIP
// text encoder in the LDM layout, 1024-wide context, linear projections) is detected,
// loads, and generates with eps and v prediction, at sizes in steps of 8.
#include <gtest/gtest.h>

#include "../golden/e2e_support.h"
#include "image/image_io.h"

namespace {

using namespace ggdiff::e2e;

TEST(Sd2, DetectsLoadsAndGenerates) {
    if (!prerequisites_ok()) GTEST_SKIP() << "fixture or python/numpy missing";
    const std::string dir = fresh_dir();
    const std::string list = dir + "/sd2.tensors";
    const std::string model = dir + "/sd2.safetensors";
    const std::string tools = std::string(GGDIFF_SOURCE_DIR) + "/tests/tools/sd2_tensors.py";
    const std::string gen = shared_dir() + "/tools/make_fixture.py";
    ASSERT_EQ(
        std::system((tools + " " + shared_dir() + "/fixtures/sd1_mc32.tensors " + list).c_str()),
        0);
    ASSERT_EQ(std::system((gen + " " + list + " " + model + " --seed 4 > /dev/null").c_str()), 0);

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

    // Sizes whose latent sides the UNet's down factor does not divide come out exact.
    for (const auto& [w, h] : std::vector<std::pair<int, int>>{{96, 64}, {72, 136}, {520, 520}}) {
        const std::string tag = std::to_string(w) + "x" + std::to_string(h);
        RunResult r = run_ggdiff({"-m", model, "-p", "a lighthouse", "-W", std::to_string(w), "-H",
                                  std::to_string(h), "--steps", "1", "--cfg-scale", "1",
                                  "--sampling-method", "euler", "-o", dir + "/" + tag + ".png"},
                                 dir, 480);
        ASSERT_TRUE(r.succeeded()) << r.describe();
        auto sized = ggdiff::read_image(dir + "/" + tag + ".png");
        ASSERT_TRUE(sized.ok()) << sized.status().message();
        EXPECT_EQ(sized->width, w) << tag;
        EXPECT_EQ(sized->height, h) << tag;
    }
    std::error_code ec;
    fs::remove(model, ec);
}

}  // namespace
