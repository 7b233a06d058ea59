// Qwen Image through the CLI beyond the golden cases: bad input fails with a clear error
// before any weight is read, and Qwen Image Layered img2img with a batch gives
// batch * (layers + 1) RGBA images whose metadata follows the batch-seed rule.
#include <gtest/gtest.h>

#include "../golden/qwen_e2e.h"

namespace ggdiff::e2e {
namespace {

namespace fs = std::filesystem;

// With -v every module logs "<label>: N weights, X MiB, on ..." when it is declared; no
// such line means no weight was read.
bool read_weights(const RunResult& r) {
    return contains(r.err + r.out, " weights, ");
}

class QwenCli : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_TRUE(fs::is_regular_file(binary_path()));
        ASSERT_TRUE(fs::is_regular_file(qwen_fixture("qwen_layered_tiny_dit")))
            << "run through ctest: the fixture tests make the Qwen fixtures";
        dir_ = fresh_dir();
    }

    RunResult run(std::vector<std::string> args, int timeout = 300) {
        args.insert(args.end(), {"-v", "-o", dir_ + "/out.png"});
        return run_ggdiff(args, dir_, timeout);
    }

    std::string dir_;
};

TEST_F(QwenCli, NegativeLayerCountIsAnError) {
    std::vector<std::string> args = qwen_model_args(true);
    args.insert(args.end(), {"-p", "x", "--qwen-image-layers", "-1"});
    RunResult r = run(args);
    EXPECT_TRUE(r.failed_cleanly()) << r.describe();
    EXPECT_TRUE(contains(r.err, "--qwen-image-layers")) << r.describe();
    EXPECT_FALSE(read_weights(r)) << r.describe();
    EXPECT_FALSE(fs::exists(dir_ + "/out.png"));
}

TEST_F(QwenCli, PredictionOtherThanFlowIsAnError) {
    std::vector<std::string> args = qwen_model_args(false);
    args.insert(args.end(), {"-p", "x", "--prediction", "v"});
    RunResult r = run(args);
    EXPECT_TRUE(r.failed_cleanly()) << r.describe();
    EXPECT_TRUE(contains(r.err, "--prediction v does not apply to Qwen Image")) << r.describe();
    EXPECT_FALSE(read_weights(r)) << r.describe();
    EXPECT_FALSE(fs::exists(dir_ + "/out.png"));
}

TEST_F(QwenCli, LayeredDitWithRgbVaeIsAnError) {
    RunResult r = run({"--diffusion-model", qwen_fixture("qwen_layered_tiny_dit"), "--llm",
                       qwen_fixture("qwen_tiny_llm"), "--vae", qwen_fixture("qwen_vae"),
                       "--llm-tokenizer", shared_dir() + "/data/qwen2_synthetic", "-p", "x"});
    EXPECT_TRUE(r.failed_cleanly()) << r.describe();
    EXPECT_TRUE(contains(r.err, "4-channel (RGBA) Wan VAE")) << r.describe();
    EXPECT_FALSE(read_weights(r)) << "the VAE must be checked before weights are read\n"
                                  << r.describe();
}

TEST_F(QwenCli, MissingTokenizerIsAnError) {
    RunResult r =
        run({"--diffusion-model", qwen_fixture("qwen_tiny_dit"), "--llm",
             qwen_fixture("qwen_tiny_llm"), "--vae", qwen_fixture("qwen_vae"), "-p", "x"});
    EXPECT_TRUE(r.failed_cleanly()) << r.describe();
    EXPECT_TRUE(contains(r.err, "no tokenizer found")) << r.describe();
    EXPECT_TRUE(contains(r.err, "--llm-tokenizer")) << r.describe();
    EXPECT_FALSE(read_weights(r)) << r.describe();

    RunResult bad = run({"--diffusion-model", qwen_fixture("qwen_tiny_dit"), "--llm",
                         qwen_fixture("qwen_tiny_llm"), "--vae", qwen_fixture("qwen_vae"),
                         "--llm-tokenizer", dir_ + "/nowhere", "-p", "x"});
    EXPECT_TRUE(bad.failed_cleanly()) << bad.describe();
    EXPECT_TRUE(contains(bad.err, "--llm-tokenizer " + dir_ + "/nowhere")) << bad.describe();
}

// img2img from an RGB image and an RGB reference image (both gain an opaque alpha), two batch
// items of two layers each: four RGBA images, seeds 7, 7, 8, 8.
TEST_F(QwenCli, LayeredImg2ImgBatch) {
    std::vector<std::string> args = qwen_model_args(true);
    args.insert(args.end(), {"-p",
                             "a poster with a red apple",
                             "-W",
                             "64",
                             "-H",
                             "64",
                             "--steps",
                             "4",
                             "--cfg-scale",
                             "2.5",
                             "-s",
                             "7",
                             "-b",
                             "2",
                             "--qwen-image-layers",
                             "1",
                             "-i",
                             qwen_golden_dir() + "/qwen_euler.png",
                             "--strength",
                             "0.6",
                             "-r",
                             qwen_golden_dir() + "/qwen_dpmpp2m.png"});
    RunResult r = run(args, 600);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    const std::vector<std::string> outs = {dir_ + "/out.png", dir_ + "/out_1.png",
                                           dir_ + "/out_2.png", dir_ + "/out_3.png"};
    const int64_t seeds[] = {7, 7, 8, 8};
    for (size_t i = 0; i < outs.size(); ++i) {
        SCOPED_TRACE(outs[i]);
        auto img = read_image(outs[i]);
        ASSERT_TRUE(img.ok()) << img.status().message();
        EXPECT_EQ(img->channels, 4);
        EXPECT_EQ(img->width, 64);
        auto text = read_image_parameters(outs[i]);
        ASSERT_TRUE(text.ok()) << text.status().message();
        auto info = parse_infotext(*text);
        ASSERT_TRUE(info.ok()) << *text;
        EXPECT_EQ(info->seed, seeds[i]) << *text;
        ASSERT_TRUE(info->denoising_strength.has_value()) << *text;
    }
    EXPECT_FALSE(fs::exists(dir_ + "/out_4.png"));
    // Different seeds give different layers.
    const ImageDiff d = compare_images(outs[0], outs[2]);
    ASSERT_TRUE(d.ok) << d.error;
    EXPECT_GT(d.mean_abs, 1.0);
}

}  // namespace
}  // namespace ggdiff::e2e
