// SDXL from the files users have besides the single-file checkpoint: split component files
// (--diffusion-model, --clip_l, --clip_g, --vae) and a GGUF written by -M convert give the
// golden image; --vae swaps the VAE; --clip-skip, emphasis, BREAK and sizes in steps of 8.
#include <gtest/gtest.h>

#include "../golden/e2e_support.h"
#include "image/image_io.h"

namespace {

using namespace ggdiff::e2e;

const std::string kSdxl = std::string(GGDIFF_BINARY_DIR) + "/fixtures/sdxl_mc32.safetensors";

std::string golden_image() {
    return shared_dir() + "/golden/sdxl_tiny/sdxl_euler.png";
}

// The golden case sdxl_euler's request.
std::vector<std::string> euler_args() {
    return euler_request(4, "5");
}

RunResult run(std::vector<std::string> model, const std::vector<std::string>& request,
              const std::string& out, const std::string& dir) {
    model.insert(model.end(), request.begin(), request.end());
    model.insert(model.end(), {"-o", out});
    return run_ggdiff(model, dir, 900);
}

TEST(SdxlFiles, SplitComponentFilesMatchTheCheckpoint) {
    ASSERT_TRUE(fs::is_regular_file(kSdxl)) << kSdxl;
    const std::string dir = fresh_dir();
    const std::string tool = std::string(GGDIFF_SOURCE_DIR) + "/tests/tools/split_checkpoint.py";
    const std::string cmd = "/usr/bin/env python3 " + tool + " " + kSdxl + " " + dir +
                            " model.diffusion_model.=unet" +
                            " conditioner.embedders.0.transformer.=clip_l" +
                            " conditioner.embedders.1.model.=clip_g first_stage_model.=vae";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    const std::vector<std::string> files = {
        "--diffusion-model", dir + "/unet.safetensors",   "--clip_l", dir + "/clip_l.safetensors",
        "--clip_g",          dir + "/clip_g.safetensors", "--vae",    dir + "/vae.safetensors"};
    RunResult r = run(files, euler_args(), dir + "/split.png", dir);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    ImageDiff d = compare_images(dir + "/split.png", golden_image());
    ASSERT_TRUE(d.ok) << d.error;
    EXPECT_LE(d.mean_abs, 1.5) << "max " << d.max_abs;

    // --vae replaces the checkpoint's VAE (here by the SD1 fixture's, other weights).
    r = run({"-m", kSdxl, "--vae", fixture_path()}, euler_args(), dir + "/vae.png", dir);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    d = compare_images(dir + "/vae.png", golden_image());
    ASSERT_TRUE(d.ok) << d.error;
    EXPECT_GT(d.mean_abs, 5.0) << "--vae had no effect";
    // Without the text encoders the error says which flag brings them.
    r = run({"--diffusion-model", dir + "/unet.safetensors", "--vae", dir + "/vae.safetensors",
             "--clip_l", dir + "/clip_l.safetensors"},
            euler_args(), dir + "/none.png", dir);
    EXPECT_TRUE(r.failed_cleanly()) << r.describe();
    EXPECT_TRUE(contains(r.err, "--clip_g")) << r.err;
}

TEST(SdxlFiles, ConvertedGgufMatchesTheCheckpoint) {
    ASSERT_TRUE(fs::is_regular_file(kSdxl)) << kSdxl;
    const std::string dir = fresh_dir();
    const std::string gguf = dir + "/sdxl.gguf";
    RunResult c = run_ggdiff({"-M", "convert", "-m", kSdxl, "-o", gguf}, dir, 900);
    ASSERT_TRUE(c.succeeded()) << c.describe();
    RunResult r = run({"-m", gguf}, euler_args(), dir + "/gguf.png", dir);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    const ImageDiff d = compare_images(dir + "/gguf.png", golden_image());
    ASSERT_TRUE(d.ok) << d.error;
    EXPECT_LE(d.mean_abs, 1.5) << "max " << d.max_abs;
}

// --clip-skip 1 (the last layer instead of the default penultimate one), weighted words and
// BREAK, at a size whose latent the UNet's down factor does not divide: an image of exactly
// that size whose metadata keeps the prompt and the clip skip.
TEST(SdxlFiles, ClipSkipEmphasisBreakAndAnySize) {
    ASSERT_TRUE(fs::is_regular_file(kSdxl)) << kSdxl;
    const std::string dir = fresh_dir();
    const std::string prompt = "an (astronaut:1.3) BREAK riding a [horse]";
    RunResult r = run({"-m", kSdxl},
                      {"-p", prompt, "-W", "72", "-H", "88", "--steps", "2", "--sampling-method",
                       "euler", "--cfg-scale", "5", "-s", "42", "--clip-skip", "1"},
                      dir + "/out.png", dir);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    auto img = ggdiff::read_image(dir + "/out.png");
    ASSERT_TRUE(img.ok()) << img.status().message();
    EXPECT_EQ(img->width, 72);
    EXPECT_EQ(img->height, 88);
    auto text = ggdiff::read_image_parameters(dir + "/out.png");
    ASSERT_TRUE(text.ok());
    EXPECT_TRUE(contains(*text, prompt)) << *text;
    EXPECT_TRUE(contains(*text, "Clip skip: 1")) << *text;
}

// Past the prompt-window limit, both SDXL encoders' shared check refuses the prompt before
// any sampling, with the SD1 message.
TEST(SdxlFiles, PromptOverTheWindowLimitIsRefused) {
    ASSERT_TRUE(fs::is_regular_file(kSdxl)) << kSdxl;
    const std::string dir = fresh_dir();
    std::string prompt;
    for (int i = 0; i < 40; ++i) prompt += "a cat BREAK ";
    const RunResult r = run({"-m", kSdxl}, {"-p", prompt, "-W", "64", "-H", "64", "--steps", "1"},
                            dir + "/out.png", dir);
    EXPECT_TRUE(r.failed_cleanly()) << r.describe();
    EXPECT_TRUE(contains(r.err, "the prompt is too long: 80 tokens in 40 windows")) << r.err;
    EXPECT_FALSE(contains(r.err, "sampling")) << r.err;
    EXPECT_FALSE(fs::exists(dir + "/out.png"));
}

}  // namespace
