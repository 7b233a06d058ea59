// LongCat-Image names: Comfy-Org's files store the q/k RMSNorm weights as ".weight" (FLUX's
// ".scale"), diffusers names the timestep MLP time_embed.timestep_embedder; both reach FLUX's
// original names through the registry's layouts, and detection tells LongCat (a 3584-wide
// txt_in) from FLUX.1.
#include <gtest/gtest.h>

#include <map>

#include "families/registry.h"
#include "io/name_map.h"

namespace ggdiff {
namespace {

const std::string kP = "model.diffusion_model.";

std::map<std::string, std::string> mapped(const std::vector<std::string>& names) {
    std::map<std::string, std::string> out;
    for (const NameMapping& m : map_tensor_names(names, kP, nullptr, model_layouts()))
        out[names[m.source]] = m.name;
    return out;
}

TEST(LongCatNames, ComfyNormsBecomeScales) {
    const auto m = mapped({"double_blocks.0.img_attn.norm.query_norm.weight",
                           "double_blocks.0.txt_attn.norm.key_norm.weight",
                           "single_blocks.1.norm.key_norm.weight",
                           "double_blocks.0.img_mlp.0.weight", "txt_in.weight", "img_in.weight"});
    EXPECT_EQ(m.at("double_blocks.0.img_attn.norm.query_norm.weight"),
              kP + "double_blocks.0.img_attn.norm.query_norm.scale");
    EXPECT_EQ(m.at("double_blocks.0.txt_attn.norm.key_norm.weight"),
              kP + "double_blocks.0.txt_attn.norm.key_norm.scale");
    EXPECT_EQ(m.at("single_blocks.1.norm.key_norm.weight"),
              kP + "single_blocks.1.norm.key_norm.scale");
    EXPECT_EQ(m.at("double_blocks.0.img_mlp.0.weight"), kP + "double_blocks.0.img_mlp.0.weight");
    EXPECT_EQ(m.at("txt_in.weight"), kP + "txt_in.weight");
}

TEST(LongCatNames, DiffusersTimestepEmbedderAndFluxMembers) {
    const auto m = mapped({"time_embed.timestep_embedder.linear_1.weight",
                           "time_embed.timestep_embedder.linear_2.bias", "x_embedder.weight",
                           "context_embedder.weight", "transformer_blocks.0.attn.norm_q.weight",
                           "single_transformer_blocks.0.proj_out.weight", "proj_out.weight"});
    EXPECT_EQ(m.at("time_embed.timestep_embedder.linear_1.weight"), kP + "time_in.in_layer.weight");
    EXPECT_EQ(m.at("time_embed.timestep_embedder.linear_2.bias"), kP + "time_in.out_layer.bias");
    EXPECT_EQ(m.at("x_embedder.weight"), kP + "img_in.weight");
    EXPECT_EQ(m.at("context_embedder.weight"), kP + "txt_in.weight");
    EXPECT_EQ(m.at("transformer_blocks.0.attn.norm_q.weight"),
              kP + "double_blocks.0.img_attn.norm.query_norm.scale");
    EXPECT_EQ(m.at("single_transformer_blocks.0.proj_out.weight"),
              kP + "single_blocks.0.linear2.weight");
    EXPECT_EQ(m.at("proj_out.weight"), kP + "final_layer.linear.weight");
}

}  // namespace
}  // namespace ggdiff
