// ggdiff -M upscale end to end: the ESRGAN fixtures of ../shared/golden/sd1_extras on an
// image without any diffusion model (both name layouts, x2 and x4, repeats), the parameters
// text it keeps and extends, and the errors: no -i, no model, a missing or broken file, a
// file that is no ESRGAN, a broken PyTorch file.
#include <gtest/gtest.h>

#include <fstream>

#include "../golden/e2e_support.h"
#include "image/image_io.h"
#include "image/image_metadata.h"
#include "image/infotext.h"

namespace ggdiff::e2e {
namespace {

std::string esrgan(const std::string& stem) {
    return std::string(GGDIFF_BINARY_DIR) + "/fixtures/" + stem + ".safetensors";
}

std::string extras_dir() {
    return shared_dir() + "/golden/sd1_extras";
}

void expect_clean_error(const RunResult& r, const std::string& says) {
    EXPECT_TRUE(r.failed_cleanly()) << r.describe();
    EXPECT_TRUE(contains(r.err, "error")) << r.describe();
    EXPECT_TRUE(contains(r.err, says)) << "expected '" << says << "'\n" << r.describe();
    for (const char* bad : {"terminate called", "Aborted", "Segmentation fault", "GGML_ASSERT"})
        EXPECT_FALSE(contains(r.err, bad)) << r.describe();
}

TEST(UpscaleCli, UpscalesAnImageAndKeepsItsParameters) {
    const std::string dir = fresh_dir();
    const std::string init = extras_dir() + "/plain.png";
    const RunResult r = run_ggdiff({"-M", "upscale", "-i", init, "--upscale-model",
                                    esrgan("sd1_extras_esrgan_x2"), "-o", dir + "/up.png"},
                                   dir, 300);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    auto img = read_image(dir + "/up.png");
    ASSERT_TRUE(img.ok()) << img.status().message();
    EXPECT_EQ(img->width, 128);
    EXPECT_EQ(img->height, 128);
    auto in_text = read_image_parameters(init);
    auto out_text = read_image_parameters(dir + "/up.png");
    ASSERT_TRUE(in_text.ok() && out_text.ok());
    auto in_info = parse_infotext(*in_text);
    auto out_info = parse_infotext(*out_text);
    ASSERT_TRUE(in_info.ok() && out_info.ok()) << *out_text;
    EXPECT_EQ(out_info->prompt, in_info->prompt) << *out_text;
    EXPECT_EQ(out_info->seed, in_info->seed);
    EXPECT_EQ(out_info->width, 64);  // the generation's size, as A1111 keeps it
    bool by = false, name = false;
    for (const auto& [k, v] : out_info->extra) {
        by = by || (k == "Postprocess upscale by" && v == "2");
        name = name || (k == "Postprocess upscaler" && v == "sd1_extras_esrgan_x2");
    }
    EXPECT_TRUE(by && name) << *out_text;
}

TEST(UpscaleCli, OriginalEsrganX4LayoutWithRepeats) {
    const std::string dir = fresh_dir();
    // A 16x16 crop-like input: the x4 fixture twice gives 256x256.
    Image small;
    small.width = small.height = 16;
    small.channels = 3;
    for (int i = 0; i < 16 * 16 * 3; ++i) small.pixels.push_back(static_cast<uint8_t>(i * 7));
    ImageWriteOptions wo;
    ASSERT_TRUE(write_image(dir + "/small.png", small, wo).ok());
    const RunResult r = run_ggdiff({"-M", "upscale", "-i", dir + "/small.png", "--upscale-model",
                                    esrgan("sd1_extras_esrgan_x4_old"), "--upscale-repeats", "2",
                                    "-o", dir + "/up.png", "--disable-image-metadata"},
                                   dir, 300);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    auto img = read_image(dir + "/up.png");
    ASSERT_TRUE(img.ok());
    EXPECT_EQ(img->width, 256);
    EXPECT_EQ(img->height, 256);
    auto text = read_image_parameters(dir + "/up.png");
    EXPECT_TRUE(!text.ok() || text->empty());
}

TEST(UpscaleCli, Errors) {
    const std::string dir = fresh_dir();
    const std::string init = extras_dir() + "/plain.png";
    const std::string out = dir + "/out.png";
    expect_clean_error(
        run_ggdiff({"-M", "upscale", "--upscale-model", esrgan("sd1_extras_esrgan_x2"), "-o", out},
                   dir, 60),
        "-i");
    expect_clean_error(run_ggdiff({"-M", "upscale", "-i", init, "-o", out}, dir, 60),
                       "--upscale-model");
    expect_clean_error(run_ggdiff({"-M", "upscale", "-i", init, "--upscale-model",
                                   dir + "/missing.safetensors", "-o", out},
                                  dir, 60),
                       "missing.safetensors");
    { std::ofstream(dir + "/broken.safetensors") << "this is not a checkpoint"; }
    expect_clean_error(run_ggdiff({"-M", "upscale", "-i", init, "--upscale-model",
                                   dir + "/broken.safetensors", "-o", out},
                                  dir, 60),
                       "broken.safetensors");
    expect_clean_error(
        run_ggdiff({"-M", "upscale", "-i", init, "--upscale-model", fixture_path(), "-o", out}, dir,
                   120),
        "not an ESRGAN");
    { std::ofstream(dir + "/RealESRGAN_x4plus.pth") << "PK\x03\x04 broken"; }
    expect_clean_error(run_ggdiff({"-M", "upscale", "-i", init, "--upscale-model",
                                   dir + "/RealESRGAN_x4plus.pth", "-o", out},
                                  dir, 60),
                       "zip archive");
    expect_clean_error(run_ggdiff({"-M", "upscale", "-i", dir + "/nothing.png", "--upscale-model",
                                   esrgan("sd1_extras_esrgan_x2"), "-o", out},
                                  dir, 60),
                       "nothing.png");
    expect_clean_error(run_ggdiff({"--upscale-repeats", "0"}, dir, 60), "upscale-repeats");
    EXPECT_FALSE(std::filesystem::exists(out));
}

// After generation: every image of the batch goes through the upscaler, and its
// parameters say so.
TEST(UpscaleCli, AfterGeneration) {
    const std::string dir = fresh_dir();
    std::vector<std::string> args = model_args();
    for (const char* a : {"-p", "a red cube", "-W", "64", "-H", "64", "--steps", "1",
                          "--sampling-method", "euler", "-s", "5", "-b", "2", "--upscale-model"})
        args.push_back(a);
    args.push_back(esrgan("sd1_extras_esrgan_x2"));
    args.push_back("-o");
    args.push_back(dir + "/out.png");
    const RunResult r = run_ggdiff(args, dir, 600);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    for (const char* f : {"/out.png", "/out_1.png"}) {
        auto img = read_image(dir + f);
        ASSERT_TRUE(img.ok()) << f;
        EXPECT_EQ(img->width, 128);
        auto text = read_image_parameters(dir + f);
        ASSERT_TRUE(text.ok());
        EXPECT_TRUE(contains(*text, "Size: 64x64")) << *text;
        EXPECT_TRUE(contains(*text,
                             "Postprocess upscale by: 2, Postprocess upscaler: "
                             "sd1_extras_esrgan_x2"))
            << *text;
    }
}

}  // namespace
}  // namespace ggdiff::e2e
