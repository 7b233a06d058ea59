// LoRA on SDXL: kohya names for both text encoders (te1 = CLIP-L, te2 = OpenCLIP bigG) and
// for the UNet over its LDM paths, a LoCon convolution pair and a PEFT module on the fused
// GEGLU projection all find their weights; merged and at run time they give the same image,
// which differs from the image without the LoRA.
#include <gtest/gtest.h>

#include "../golden/e2e_support.h"

namespace ggdiff::e2e {
namespace {

const std::string kSdxl = std::string(GGDIFF_BINARY_DIR) + "/fixtures/sdxl_mc32.safetensors";

TEST(LoraSdxl, EveryNamingSchemeAppliesMergedAndAtRuntime) {
    ASSERT_TRUE(fs::is_regular_file(kSdxl)) << kSdxl;
    const std::string dir = fresh_dir();
    const std::string list = std::string(GGDIFF_SOURCE_DIR) + "/tests/lora/lora_sdxl_tiny.tensors";
    const std::string cmd = shared_dir() + "/tools/make_fixture.py " + list + " " + dir +
                            "/tiny.safetensors --seed 5 > /dev/null";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    auto run = [&](const std::string& mode, const std::string& out) {
        std::vector<std::string> args = {
            "-m", kSdxl, "--lora-model-dir", dir, "--lora-apply-mode", mode, "-o", out};
        const std::vector<std::string> request =
            euler_request(4, "5", "a photograph of an astronaut riding a horse<lora:tiny:1>");
        args.insert(args.end(), request.begin(), request.end());
        return run_ggdiff(args, dir, 900);
    };
    const RunResult merged = run("immediately", dir + "/merged.png");
    ASSERT_TRUE(merged.succeeded()) << merged.describe();
    EXPECT_TRUE(contains(merged.err, "6 updates merged, 0 applied at run time")) << merged.err;
    EXPECT_FALSE(contains(merged.err, "match no weight")) << merged.err;
    const RunResult runtime = run("at_runtime", dir + "/runtime.png");
    ASSERT_TRUE(runtime.succeeded()) << runtime.describe();
    EXPECT_TRUE(contains(runtime.err, "0 updates merged, 6 applied at run time")) << runtime.err;

    const ImageDiff same = compare_images(dir + "/runtime.png", dir + "/merged.png");
    ASSERT_TRUE(same.ok) << same.error;
    EXPECT_LE(same.mean_abs, 0.6) << "max " << same.max_abs;
    // The same request without the tag is the golden sdxl_euler image.
    const ImageDiff moved =
        compare_images(dir + "/merged.png", shared_dir() + "/golden/sdxl_tiny/sdxl_euler.png");
    ASSERT_TRUE(moved.ok) << moved.error;
    EXPECT_GT(moved.mean_abs, 3.0) << "the LoRA changed nothing";
    std::printf("lora sdxl: at_runtime vs merged %.3f, merged vs no LoRA %.3f\n", same.mean_abs,
                moved.mean_abs);
}

}  // namespace
}  // namespace ggdiff::e2e
