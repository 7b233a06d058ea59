// The --auto-fit plan's components (pipeline/placement_setup.h: plan_auto_fit_for) count every
// weight of the files by the module that runs it, LTX-2's part files too, whose tensors keep
// their own names: the text projection of --embeddings-connectors
// (text_embedding_projection.*) with the text encoders, --audio-vae's decoder and vocoder
// (audio_vae.*, vocoder.*) with the VAE.
#include <gtest/gtest.h>

#include <unistd.h>
#include <string>

#include "../io/io_test_util.h"
#include "../support/scratch.h"
#include "io/tensor_index.h"
#include "pipeline/placement_setup.h"

namespace ggdiff {
namespace {

uint64_t planned(const placement::AutoFitPlan& plan, placement::Module m) {
    for (const placement::FitComponent& c : plan.components) {
        if (c.module == m) return c.params_bytes;
    }
    return 0;
}

TEST(AutoFitParts, LtxPartsCountWithTheModulesThatRunThem) {
    using testing::f32_tensor;
    const std::string dir = scratch::fresh(std::string(GGDIFF_TEST_TMP) + "/auto_fit_parts_" +
                                           std::to_string(getpid()));
    // f32 [8, n]: 32 n bytes each.
    testing::write_safetensors(dir + "/llm.safetensors", {f32_tensor("model.norm.weight", {8, 1})});
    testing::write_safetensors(
        dir + "/connectors.safetensors",
        {f32_tensor("text_embedding_projection.video_aggregate_embed.weight", {8, 2}),
         f32_tensor("model.diffusion_model.video_embeddings_connector.x.weight", {8, 4})});
    testing::write_safetensors(dir + "/audio_vae.safetensors",
                               {f32_tensor("audio_vae.decoder.conv_in.conv.weight", {8, 8}),
                                f32_tensor("vocoder.vocoder.conv_pre.weight", {8, 16})});
    testing::write_safetensors(dir + "/vae.safetensors",
                               {f32_tensor("decoder.conv_in.weight", {8, 32})});
    TensorIndex index;
    ASSERT_TRUE(index.add(dir + "/llm.safetensors", prefix_for_role("llm")).ok());
    ASSERT_TRUE(
        index.add(dir + "/connectors.safetensors", prefix_for_role("embeddings-connectors")).ok());
    ASSERT_TRUE(index.add(dir + "/audio_vae.safetensors", prefix_for_role("audio-vae")).ok());
    ASSERT_TRUE(index.add(dir + "/vae.safetensors", prefix_for_role("vae")).ok());
    ModelOptions o;
    o.auto_fit = true;
    auto plan = plan_auto_fit_for(o, index, -1);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    EXPECT_EQ(planned(*plan, placement::Module::TextEncoder), 32u * (1 + 2));
    EXPECT_EQ(planned(*plan, placement::Module::Diffusion), 32u * 4);
    EXPECT_EQ(planned(*plan, placement::Module::Vae), 32u * (8 + 16 + 32));
}

}  // namespace
}  // namespace ggdiff
