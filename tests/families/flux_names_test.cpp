// FLUX.1 names: diffusers FluxTransformer2DModel -> the original layout (q/k/v kept apart),
// and the wrappers of ComfyUI's single-file DiT checkpoints.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "families/registry.h"
#include "io/name_map.h"

namespace ggdiff {
namespace {

std::map<std::string, std::string> mapped(const std::vector<std::string>& names,
                                          const std::string& prefix) {
    std::map<std::string, std::string> out;
    for (const NameMapping& m : map_tensor_names(names, prefix, nullptr, model_layouts()))
        out[names[m.source]] = m.name;
    return out;
}

TEST(NameMapFlux, DiffusersTransformerToOriginalNames) {
    const std::vector<std::string> names = {
        "x_embedder.weight",
        "context_embedder.bias",
        "time_text_embed.timestep_embedder.linear_1.weight",
        "time_text_embed.guidance_embedder.linear_2.bias",
        "time_text_embed.text_embedder.linear_1.weight",
        "transformer_blocks.3.norm1.linear.weight",
        "transformer_blocks.3.norm1_context.linear.bias",
        "transformer_blocks.3.attn.to_q.weight",
        "transformer_blocks.3.attn.add_v_proj.bias",
        "transformer_blocks.3.attn.norm_q.weight",
        "transformer_blocks.3.attn.norm_added_k.weight",
        "transformer_blocks.3.attn.to_out.0.weight",
        "transformer_blocks.3.attn.to_add_out.bias",
        "transformer_blocks.3.ff.net.0.proj.weight",
        "transformer_blocks.3.ff_context.net.2.bias",
        "single_transformer_blocks.7.norm.linear.weight",
        "single_transformer_blocks.7.attn.to_k.weight",
        "single_transformer_blocks.7.proj_mlp.bias",
        "single_transformer_blocks.7.proj_out.weight",
        "single_transformer_blocks.7.attn.norm_k.weight",
        "norm_out.linear.weight",
        "proj_out.bias",
    };
    const std::string p = "model.diffusion_model.";
    const auto m = mapped(names, p);
    const std::map<std::string, std::string> want = {
        {"x_embedder.weight", p + "img_in.weight"},
        {"context_embedder.bias", p + "txt_in.bias"},
        {"time_text_embed.timestep_embedder.linear_1.weight", p + "time_in.in_layer.weight"},
        {"time_text_embed.guidance_embedder.linear_2.bias", p + "guidance_in.out_layer.bias"},
        {"time_text_embed.text_embedder.linear_1.weight", p + "vector_in.in_layer.weight"},
        {"transformer_blocks.3.norm1.linear.weight", p + "double_blocks.3.img_mod.lin.weight"},
        {"transformer_blocks.3.norm1_context.linear.bias", p + "double_blocks.3.txt_mod.lin.bias"},
        {"transformer_blocks.3.attn.to_q.weight", p + "double_blocks.3.img_attn.q.weight"},
        {"transformer_blocks.3.attn.add_v_proj.bias", p + "double_blocks.3.txt_attn.v.bias"},
        {"transformer_blocks.3.attn.norm_q.weight",
         p + "double_blocks.3.img_attn.norm.query_norm.scale"},
        {"transformer_blocks.3.attn.norm_added_k.weight",
         p + "double_blocks.3.txt_attn.norm.key_norm.scale"},
        {"transformer_blocks.3.attn.to_out.0.weight", p + "double_blocks.3.img_attn.proj.weight"},
        {"transformer_blocks.3.attn.to_add_out.bias", p + "double_blocks.3.txt_attn.proj.bias"},
        {"transformer_blocks.3.ff.net.0.proj.weight", p + "double_blocks.3.img_mlp.0.weight"},
        {"transformer_blocks.3.ff_context.net.2.bias", p + "double_blocks.3.txt_mlp.2.bias"},
        {"single_transformer_blocks.7.norm.linear.weight",
         p + "single_blocks.7.modulation.lin.weight"},
        {"single_transformer_blocks.7.attn.to_k.weight", p + "single_blocks.7.k.weight"},
        {"single_transformer_blocks.7.proj_mlp.bias", p + "single_blocks.7.mlp_in.bias"},
        {"single_transformer_blocks.7.proj_out.weight", p + "single_blocks.7.linear2.weight"},
        {"single_transformer_blocks.7.attn.norm_k.weight",
         p + "single_blocks.7.norm.key_norm.scale"},
        {"norm_out.linear.weight", p + "final_layer.adaLN_scale_shift.weight"},
        {"proj_out.bias", p + "final_layer.linear.bias"},
    };
    EXPECT_EQ(m, want);
    // Given as -m, a bare diffusers transformer is filed under the diffusion model.
    EXPECT_EQ(mapped(names, "").at("x_embedder.weight"), p + "img_in.weight");
}

TEST(NameMapFlux, SingleFileCheckpointWrappers) {
    const auto m = mapped(
        {
            "model.diffusion_model.img_in.weight",
            "text_encoders.clip_l.transformer.text_model.final_layer_norm.weight",
            "text_encoders.t5xxl.transformer.encoder.block.0.layer.0.SelfAttention.q.weight",
            "text_encoders.t5xxl.transformer.shared.weight",
            "vae.decoder.conv_in.weight",
        },
        "");
    EXPECT_EQ(m.at("text_encoders.clip_l.transformer.text_model.final_layer_norm.weight"),
              "text_encoders.clip_l.text_model.final_layer_norm.weight");
    EXPECT_EQ(
        m.at("text_encoders.t5xxl.transformer.encoder.block.0.layer.0.SelfAttention.q.weight"),
        "text_encoders.t5xxl.encoder.block.0.layer.0.SelfAttention.q.weight");
    EXPECT_EQ(m.at("text_encoders.t5xxl.transformer.shared.weight"),
              "text_encoders.t5xxl.shared.weight");
    EXPECT_EQ(m.at("vae.decoder.conv_in.weight"), "first_stage_model.decoder.conv_in.weight");
    EXPECT_EQ(m.at("model.diffusion_model.img_in.weight"), "model.diffusion_model.img_in.weight");
}

}  // namespace
}  // namespace ggdiff
