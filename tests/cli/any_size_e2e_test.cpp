// Any width and height in steps of 8 give an image of exactly that size on UNet models,
// also where the latent side is not divisible by the UNet's down factor (each upsampling
// then resizes to its skip connection's size), on the SD1 and SD2 fixtures. One step, no
// CFG, one size per test: only the size matters here; the UNet's numbers at such sizes are
// checked against a reference in tests/unet.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../golden/e2e_support.h"
#include "image/image_io.h"
#include "image/infotext.h"
#include "sd2_fixture.h"

namespace ggdiff::e2e {
namespace {

struct SizeCase {
    const char* model;  // "sd1" or "sd2"
    int w, h;
};

std::string case_name(const ::testing::TestParamInfo<SizeCase>& info) {
    return std::string(info.param.model) + "_" + std::to_string(info.param.w) + "x" +
           std::to_string(info.param.h);
}

class AnySize : public ::testing::TestWithParam<SizeCase> {};

TEST_P(AnySize, ImageHasExactlyTheRequestedSize) {
    const SizeCase& c = GetParam();
    ASSERT_TRUE(prerequisites_ok());
    const std::string dir = fresh_dir();
    const std::string model = std::string(c.model) == "sd2" ? sd2_fixture() : fixture_path();
    ASSERT_FALSE(model.empty());
    const std::string out = dir + "/out.png";
    const RunResult r = run_ggdiff(
        {"-m", model, "-p", "a lighthouse", "-W", std::to_string(c.w), "-H", std::to_string(c.h),
         "--steps", "1", "--cfg-scale", "1", "--sampling-method", "euler", "-s", "3", "-o", out},
        dir, 560);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    std::printf("[ size     ] %s %dx%d in %.1f s\n", c.model, c.w, c.h, r.seconds);
    auto img = read_image(out);
    ASSERT_TRUE(img.ok()) << img.status().message();
    EXPECT_EQ(img->width, c.w);
    EXPECT_EQ(img->height, c.h);
    auto text = read_image_parameters(out);
    ASSERT_TRUE(text.ok()) << text.status().message();
    auto info = parse_infotext(*text);
    ASSERT_TRUE(info.ok()) << info.status().message();
    EXPECT_EQ(info->width, c.w);
    EXPECT_EQ(info->height, c.h);
}

INSTANTIATE_TEST_SUITE_P(Sizes, AnySize,
                         ::testing::Values(SizeCase{"sd1", 96, 64}, SizeCase{"sd1", 72, 136},
                                           SizeCase{"sd1", 520, 520}, SizeCase{"sd2", 96, 64},
                                           SizeCase{"sd2", 72, 136}, SizeCase{"sd2", 520, 520}),
                         case_name);

TEST(AnySizeErrors, NotAMultipleOf8NamesTheNearest) {
    ASSERT_TRUE(prerequisites_ok());
    const std::string dir = fresh_dir();
    std::vector<std::string> args = model_args();
    args.insert(args.end(), {"-p", "x", "-W", "100", "-H", "64", "-o", dir + "/out.png"});
    const RunResult r = run_ggdiff(args, dir, 60);
    EXPECT_TRUE(r.failed_cleanly()) << r.describe();
    EXPECT_TRUE(contains(r.err, "96 or 104")) << r.describe();
    EXPECT_FALSE(fs::exists(dir + "/out.png"));
}

}  // namespace
}  // namespace ggdiff::e2e
