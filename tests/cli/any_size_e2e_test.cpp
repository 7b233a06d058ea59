// Any width and height in steps of 8 give an image of exactly that size on UNet models,
// also where the latent side is not divisible by the UNet's down factor (each upsampling
// then resizes to its skip connection's size). One step, no CFG: only the size matters here;
// the UNet's numbers at such sizes are checked against a reference in tests/unet.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../golden/e2e_support.h"
#include "image/image_io.h"
#include "image/infotext.h"

namespace ggdiff::e2e {
namespace {

struct Size {
    int w, h;
};

// Generates each size with `model_args` and checks the file's size and its metadata.
void expect_exact_sizes(const std::vector<std::string>& model_args, const std::string& dir,
                        const std::vector<Size>& sizes) {
    for (const Size& s : sizes) {
        const std::string tag = std::to_string(s.w) + "x" + std::to_string(s.h);
        const std::string out = dir + "/" + tag + ".png";
        std::vector<std::string> args = model_args;
        args.insert(args.end(), {"-p", "a lighthouse", "-W", std::to_string(s.w), "-H",
                                 std::to_string(s.h), "--steps", "1", "--cfg-scale", "1",
                                 "--sampling-method", "euler", "-s", "3", "-o", out});
        const RunResult r = run_ggdiff(args, dir, 480);
        ASSERT_TRUE(r.succeeded()) << r.describe();
        std::printf("[ size     ] %s in %.1f s\n", tag.c_str(), r.seconds);
        auto img = read_image(out);
        ASSERT_TRUE(img.ok()) << img.status().message();
        EXPECT_EQ(img->width, s.w) << tag;
        EXPECT_EQ(img->height, s.h) << tag;
        auto text = read_image_parameters(out);
        ASSERT_TRUE(text.ok()) << text.status().message();
        auto info = parse_infotext(*text);
        ASSERT_TRUE(info.ok()) << info.status().message();
        EXPECT_EQ(info->width, s.w);
        EXPECT_EQ(info->height, s.h);
    }
}

TEST(AnySize, Sd1ExactSizes) {
    ASSERT_TRUE(prerequisites_ok());
    const std::string dir = fresh_dir();
    expect_exact_sizes(model_args(), dir, {{96, 64}, {72, 136}, {520, 520}});
}

TEST(AnySize, NotAMultipleOf8NamesTheNearest) {
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
