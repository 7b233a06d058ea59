// LoRA from the CLI: alpha/rank scaling, unmatched and malformed LoRA files, missing
// folders and names.
#include <gtest/gtest.h>

#include "../golden/e2e_support.h"
#include "../io/io_test_util.h"

namespace ggdiff::e2e {
namespace {

const std::string kLoras = std::string(GGDIFF_BINARY_DIR) + "/fixtures/sd1_lora_loras";

std::vector<std::string> request(const std::string& prompt, const std::string& lora_dir,
                                 const std::string& out, int steps = 4) {
    std::vector<std::string> args = model_args();
    for (const std::string& a :
         {std::string("-p"), prompt, std::string("-W"), std::string("64"), std::string("-H"),
          std::string("64"), std::string("--steps"), std::to_string(steps),
          std::string("--sampling-method"), std::string("euler"), std::string("--cfg-scale"),
          std::string("7"), std::string("-s"), std::string("42"), std::string("-o"), out}) {
        args.push_back(a);
    }
    if (!lora_dir.empty()) {
        args.push_back("--lora-model-dir");
        args.push_back(lora_dir);
    }
    return args;
}

// kohya_alpha is the kohya LoRA with alpha 2 at rank 4: weight 1 scales by 0.5, the
// reference's kohya at 0.5.
TEST(LoraCli, AlphaOverRankScales) {
    const std::string dir = fresh_dir();
    const RunResult r =
        run_ggdiff(request("a photograph of an astronaut riding a horse<lora:kohya_alpha:1>",
                           kLoras, dir + "/out.png"),
                   dir);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    const ImageDiff d =
        compare_images(dir + "/out.png", shared_dir() + "/golden/sd1_lora/lora_kohya_half.png");
    ASSERT_TRUE(d.ok) << d.error;
    EXPECT_LE(d.mean_abs, 1.5);
}

// A module for a weight the model does not have and a tensor that is no LoRA part are
// reported by name; the rest applies.
TEST(LoraCli, UnmatchedTensorsAreReportedByName) {
    const std::string dir = fresh_dir();
    using testing::f32_tensor;
    testing::write_safetensors(
        dir + "/odd.safetensors",
        {f32_tensor("lora_unet_down_blocks_0_attentions_0_proj_in.lora_down.weight", {2, 32, 1, 1}),
         f32_tensor("lora_unet_down_blocks_0_attentions_0_proj_in.lora_up.weight", {32, 2, 1, 1}),
         f32_tensor("lora_unet_down_blocks_7_no_such_layer.lora_down.weight", {2, 8}),
         f32_tensor("lora_unet_down_blocks_7_no_such_layer.lora_up.weight", {8, 2}),
         f32_tensor("some_training_step_counter", {1})});
    const RunResult r = run_ggdiff(request("a cat<lora:odd:1>", dir, dir + "/out.png", 1), dir);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    EXPECT_TRUE(contains(r.err, "lora_unet_down_blocks_7_no_such_layer")) << r.err;
    EXPECT_TRUE(contains(r.err, "some_training_step_counter")) << r.err;
    EXPECT_TRUE(contains(r.err, "1 updates merged")) << r.err;
}

TEST(LoraCli, ShapeMismatchIsAnErrorNamingTheTensor) {
    const std::string dir = fresh_dir();
    using testing::f32_tensor;
    testing::write_safetensors(
        dir + "/bad.safetensors",
        {f32_tensor("lora_unet_down_blocks_0_attentions_0_proj_in.lora_down.weight", {2, 48}),
         f32_tensor("lora_unet_down_blocks_0_attentions_0_proj_in.lora_up.weight", {32, 2})});
    const RunResult r = run_ggdiff(request("a cat<lora:bad:1>", dir, dir + "/out.png", 1), dir);
    EXPECT_TRUE(r.failed_cleanly()) << r.describe();
    EXPECT_TRUE(contains(r.err, "lora_unet_down_blocks_0_attentions_0_proj_in.lora_down.weight"))
        << r.err;
    EXPECT_FALSE(fs::exists(dir + "/out.png"));
}

TEST(LoraCli, MissingFolderOrNameIsAnError) {
    const std::string dir = fresh_dir();
    RunResult r = run_ggdiff(request("a cat<lora:kohya:1>", "", dir + "/out.png", 1), dir);
    EXPECT_TRUE(r.failed_cleanly()) << r.describe();
    EXPECT_TRUE(contains(r.err, "--lora-model-dir")) << r.err;
    r = run_ggdiff(request("a cat<lora:nosuchlora:1>", kLoras, dir + "/out.png", 1), dir);
    EXPECT_TRUE(r.failed_cleanly()) << r.describe();
    EXPECT_TRUE(contains(r.err, "nosuchlora")) << r.err;
}

}  // namespace
}  // namespace ggdiff::e2e
