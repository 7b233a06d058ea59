// The hires fix through the CLI on the SD1 fixture (the golden cases in
// ../shared/golden/sd1_extras check the numbers): an image upscaler with a target size and a
// batch, the output size and parameters, "None", and the errors for an upscaler that is
// neither a built-in one nor a model in --hires-upscalers-dir.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../golden/e2e_support.h"
#include "image/image_io.h"
#include "image/infotext.h"

namespace ggdiff::e2e {
namespace {

std::vector<std::string> base_args(const std::string& out) {
    return {"-m", fixture_path(), "-p", "a red cube",        "-W",    "64", "-H", "64", "--steps",
            "2",  "--cfg-scale",  "1",  "--sampling-method", "euler", "-s", "5",  "-o", out};
}

std::string extra_value(const GenerationInfo& info, const std::string& key) {
    for (const auto& [k, v] : info.extra) {
        if (k == key) return v;
    }
    return "<missing>";
}

TEST(HiresCli, ImageUpscalerWithTargetSizeAndBatch) {
    ASSERT_TRUE(prerequisites_ok());
    const std::string dir = fresh_dir();
    auto args = base_args(dir + "/out.png");
    // 96 alone: a square target, rounded up to the UNet's 64.
    for (const char* a : {"--hires", "--hires-upscaler", "Lanczos", "--hires-width", "96",
                          "--hires-steps", "1", "--hires-denoising-strength", "0.6", "-b", "2"}) {
        args.push_back(a);
    }
    const RunResult r = run_ggdiff(args, dir, 560);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    EXPECT_NE(r.err.find("rounded up to 128x128"), std::string::npos) << r.describe();
    std::vector<Image> images;
    for (const std::string name : {"out.png", "out_1.png"}) {
        const std::string path = dir + "/" + name;
        auto img = read_image(path);
        ASSERT_TRUE(img.ok()) << img.status().message();
        EXPECT_EQ(img->width, 128);
        EXPECT_EQ(img->height, 128);
        images.push_back(*img);
        auto text = read_image_parameters(path);
        ASSERT_TRUE(text.ok());
        auto info = parse_infotext(*text);
        ASSERT_TRUE(info.ok()) << *text;
        EXPECT_EQ(info->width, 64) << *text;  // the first pass's size, as A1111
        ASSERT_TRUE(info->denoising_strength.has_value()) << *text;
        EXPECT_FLOAT_EQ(*info->denoising_strength, 0.6f);
        EXPECT_EQ(extra_value(*info, "Hires resize"), "128x128") << *text;
        EXPECT_EQ(extra_value(*info, "Hires steps"), "1") << *text;
        EXPECT_EQ(extra_value(*info, "Hires upscaler"), "Lanczos") << *text;
        EXPECT_EQ(info->seed, name == "out.png" ? 5 : 6);
    }
    EXPECT_NE(images[0].pixels, images[1].pixels);
    EXPECT_FALSE(fs::exists(dir + "/out_2.png"));
}

TEST(HiresCli, NoneTurnsItOff) {
    ASSERT_TRUE(prerequisites_ok());
    const std::string dir = fresh_dir();
    auto args = base_args(dir + "/out.png");
    for (const char* a : {"--hires", "--hires-upscaler", "None"}) args.push_back(a);
    const RunResult r = run_ggdiff(args, dir, 300);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    auto img = read_image(dir + "/out.png");
    ASSERT_TRUE(img.ok());
    EXPECT_EQ(img->width, 64);
    auto text = read_image_parameters(dir + "/out.png");
    ASSERT_TRUE(text.ok());
    EXPECT_EQ(text->find("Hires"), std::string::npos) << *text;
}

TEST(HiresCli, UnknownUpscalerIsAnErrorBeforeSampling) {
    ASSERT_TRUE(prerequisites_ok());
    const std::string dir = fresh_dir();
    auto args = base_args(dir + "/out.png");
    for (const char* a : {"--hires", "--hires-upscaler", "4x_missing"}) args.push_back(a);
    RunResult r = run_ggdiff(args, dir, 300);
    ASSERT_TRUE(r.failed_cleanly()) << r.describe();
    EXPECT_NE(r.err.find("--hires-upscalers-dir"), std::string::npos) << r.describe();
    EXPECT_EQ(r.err.find("sampling"), std::string::npos) << r.describe();

    const std::string models = dir + "/upscalers";
    fs::create_directories(models);
    args.push_back("--hires-upscalers-dir");
    args.push_back(models);
    r = run_ggdiff(args, dir, 300);
    ASSERT_TRUE(r.failed_cleanly()) << r.describe();
    EXPECT_NE(r.err.find("no 4x_missing.gguf"), std::string::npos) << r.describe();
    EXPECT_FALSE(fs::exists(dir + "/out.png"));
}

}  // namespace
}  // namespace ggdiff::e2e
