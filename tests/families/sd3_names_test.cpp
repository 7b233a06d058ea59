// SD3 names: diffusers SD3Transformer2DModel -> the original MMDiT layout (q/k/v kept apart,
// the (scale, shift) norms under names of their own), its detection, and an SD3 diffusers
// pipeline folder routed to the roles the SD3 recipe reads.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "../io/io_test_util.h"
#include "families/registry.h"
#include "families/sd3/names.h"
#include "io/name_map.h"
#include "io/name_util.h"

namespace ggdiff {
namespace {

using testing::f16_tensor;
using testing::make_dirs;
using testing::test_dir;
using testing::write_bytes;
using testing::write_safetensors;

std::map<std::string, std::string> mapped(const std::vector<std::string>& names,
                                          const std::string& prefix) {
    std::map<std::string, std::string> out;
    for (const NameMapping& m : map_tensor_names(names, prefix, nullptr, model_layouts()))
        out[names[m.source]] = m.name;
    return out;
}

// Three blocks: 0 with MMDiT-X self-attention (attn2), 1 plain, 2 the last (pre-only context).
const std::vector<std::string> kDiffusersNames = {
    "pos_embed.pos_embed",
    "pos_embed.proj.weight",
    "pos_embed.proj.bias",
    "time_text_embed.timestep_embedder.linear_1.weight",
    "time_text_embed.timestep_embedder.linear_2.bias",
    "time_text_embed.text_embedder.linear_1.bias",
    "time_text_embed.text_embedder.linear_2.weight",
    "context_embedder.weight",
    "transformer_blocks.0.norm1.linear.weight",
    "transformer_blocks.0.norm1_context.linear.bias",
    "transformer_blocks.0.attn.to_q.weight",
    "transformer_blocks.0.attn.to_k.bias",
    "transformer_blocks.0.attn.to_v.weight",
    "transformer_blocks.0.attn.add_q_proj.weight",
    "transformer_blocks.0.attn.add_k_proj.weight",
    "transformer_blocks.0.attn.add_v_proj.bias",
    "transformer_blocks.0.attn.norm_q.weight",
    "transformer_blocks.0.attn.norm_k.weight",
    "transformer_blocks.0.attn.norm_added_q.weight",
    "transformer_blocks.0.attn.norm_added_k.weight",
    "transformer_blocks.0.attn.to_out.0.weight",
    "transformer_blocks.0.attn.to_add_out.bias",
    "transformer_blocks.0.attn2.to_q.weight",
    "transformer_blocks.0.attn2.to_k.weight",
    "transformer_blocks.0.attn2.to_v.bias",
    "transformer_blocks.0.attn2.norm_q.weight",
    "transformer_blocks.0.attn2.norm_k.weight",
    "transformer_blocks.0.attn2.to_out.0.bias",
    "transformer_blocks.0.ff.net.0.proj.weight",
    "transformer_blocks.0.ff.net.2.bias",
    "transformer_blocks.0.ff_context.net.0.proj.bias",
    "transformer_blocks.0.ff_context.net.2.weight",
    "transformer_blocks.1.norm1_context.linear.weight",
    "transformer_blocks.2.norm1.linear.bias",
    "transformer_blocks.2.norm1_context.linear.weight",
    "transformer_blocks.2.norm1_context.linear.bias",
    "transformer_blocks.2.attn.add_q_proj.weight",
    "transformer_blocks.2.attn.to_out.0.weight",
    "transformer_blocks.2.ff.net.2.weight",
    "norm_out.linear.weight",
    "norm_out.linear.bias",
    "proj_out.weight",
    "proj_out.bias",
};

TEST(Sd3Names, DiffusersTransformerToOriginalNames) {
    const std::string p = "model.diffusion_model.";
    const std::string b0 = p + "joint_blocks.0.", b2 = p + "joint_blocks.2.";
    const std::map<std::string, std::string> want = {
        {"pos_embed.pos_embed", p + "pos_embed"},
        {"pos_embed.proj.weight", p + "x_embedder.proj.weight"},
        {"pos_embed.proj.bias", p + "x_embedder.proj.bias"},
        {"time_text_embed.timestep_embedder.linear_1.weight", p + "t_embedder.mlp.0.weight"},
        {"time_text_embed.timestep_embedder.linear_2.bias", p + "t_embedder.mlp.2.bias"},
        {"time_text_embed.text_embedder.linear_1.bias", p + "y_embedder.mlp.0.bias"},
        {"time_text_embed.text_embedder.linear_2.weight", p + "y_embedder.mlp.2.weight"},
        {"context_embedder.weight", p + "context_embedder.weight"},
        {"transformer_blocks.0.norm1.linear.weight", b0 + "x_block.adaLN_modulation.1.weight"},
        {"transformer_blocks.0.norm1_context.linear.bias",
         b0 + "context_block.adaLN_modulation.1.bias"},
        {"transformer_blocks.0.attn.to_q.weight", b0 + "x_block.attn.q.weight"},
        {"transformer_blocks.0.attn.to_k.bias", b0 + "x_block.attn.k.bias"},
        {"transformer_blocks.0.attn.to_v.weight", b0 + "x_block.attn.v.weight"},
        {"transformer_blocks.0.attn.add_q_proj.weight", b0 + "context_block.attn.q.weight"},
        {"transformer_blocks.0.attn.add_k_proj.weight", b0 + "context_block.attn.k.weight"},
        {"transformer_blocks.0.attn.add_v_proj.bias", b0 + "context_block.attn.v.bias"},
        {"transformer_blocks.0.attn.norm_q.weight", b0 + "x_block.attn.ln_q.weight"},
        {"transformer_blocks.0.attn.norm_k.weight", b0 + "x_block.attn.ln_k.weight"},
        {"transformer_blocks.0.attn.norm_added_q.weight", b0 + "context_block.attn.ln_q.weight"},
        {"transformer_blocks.0.attn.norm_added_k.weight", b0 + "context_block.attn.ln_k.weight"},
        {"transformer_blocks.0.attn.to_out.0.weight", b0 + "x_block.attn.proj.weight"},
        {"transformer_blocks.0.attn.to_add_out.bias", b0 + "context_block.attn.proj.bias"},
        {"transformer_blocks.0.attn2.to_q.weight", b0 + "x_block.attn2.q.weight"},
        {"transformer_blocks.0.attn2.to_k.weight", b0 + "x_block.attn2.k.weight"},
        {"transformer_blocks.0.attn2.to_v.bias", b0 + "x_block.attn2.v.bias"},
        {"transformer_blocks.0.attn2.norm_q.weight", b0 + "x_block.attn2.ln_q.weight"},
        {"transformer_blocks.0.attn2.norm_k.weight", b0 + "x_block.attn2.ln_k.weight"},
        {"transformer_blocks.0.attn2.to_out.0.bias", b0 + "x_block.attn2.proj.bias"},
        {"transformer_blocks.0.ff.net.0.proj.weight", b0 + "x_block.mlp.fc1.weight"},
        {"transformer_blocks.0.ff.net.2.bias", b0 + "x_block.mlp.fc2.bias"},
        {"transformer_blocks.0.ff_context.net.0.proj.bias", b0 + "context_block.mlp.fc1.bias"},
        {"transformer_blocks.0.ff_context.net.2.weight", b0 + "context_block.mlp.fc2.weight"},
        {"transformer_blocks.1.norm1_context.linear.weight",
         p + "joint_blocks.1.context_block.adaLN_modulation.1.weight"},
        {"transformer_blocks.2.norm1.linear.bias", b2 + "x_block.adaLN_modulation.1.bias"},
        // The last block's context norm and norm_out are (scale, shift): names of their own.
        {"transformer_blocks.2.norm1_context.linear.weight",
         b2 + "context_block.adaLN_scale_shift.weight"},
        {"transformer_blocks.2.norm1_context.linear.bias",
         b2 + "context_block.adaLN_scale_shift.bias"},
        {"transformer_blocks.2.attn.add_q_proj.weight", b2 + "context_block.attn.q.weight"},
        {"transformer_blocks.2.attn.to_out.0.weight", b2 + "x_block.attn.proj.weight"},
        {"transformer_blocks.2.ff.net.2.weight", b2 + "x_block.mlp.fc2.weight"},
        {"norm_out.linear.weight", p + "final_layer.adaLN_scale_shift.weight"},
        {"norm_out.linear.bias", p + "final_layer.adaLN_scale_shift.bias"},
        {"proj_out.weight", p + "final_layer.linear.weight"},
        {"proj_out.bias", p + "final_layer.linear.bias"},
    };
    EXPECT_EQ(mapped(kDiffusersNames, p), want);
    // Given as -m, a bare diffusers transformer is filed under the diffusion model; given as
    // --diffusion-model under a wrapper, it is renamed the same way.
    EXPECT_EQ(mapped(kDiffusersNames, ""), want);
    std::vector<std::string> wrapped;
    for (const std::string& n : kDiffusersNames) wrapped.push_back("model.diffusion_model." + n);
    const auto w = mapped(wrapped, p);
    EXPECT_EQ(w.at("model.diffusion_model.norm_out.linear.bias"),
              p + "final_layer.adaLN_scale_shift.bias");
    EXPECT_EQ(w.at("model.diffusion_model.transformer_blocks.2.norm1_context.linear.weight"),
              b2 + "context_block.adaLN_scale_shift.weight");
}

TEST(Sd3Names, DetectsTheDiffusersFormOnly) {
    EXPECT_TRUE(DiffusersSd3Map::detect(kDiffusersNames));
    // The original names and FLUX's diffusers form (norm1_context too, but x_embedder and
    // single blocks) are not it.
    EXPECT_FALSE(DiffusersSd3Map::detect(
        {"x_embedder.proj.weight", "joint_blocks.0.context_block.adaLN_modulation.1.weight"}));
    const std::vector<std::string> flux = {"x_embedder.weight",
                                           "transformer_blocks.0.norm1_context.linear.weight",
                                           "single_transformer_blocks.0.proj_out.weight"};
    EXPECT_FALSE(DiffusersSd3Map::detect(flux));
    const auto f = mapped(flux, "model.diffusion_model.");
    EXPECT_EQ(f.at("transformer_blocks.0.norm1_context.linear.weight"),
              "model.diffusion_model.double_blocks.0.txt_mod.lin.weight");
    // Original names pass through untouched.
    const auto o = mapped({"joint_blocks.0.x_block.attn.qkv.weight", "x_embedder.proj.weight",
                           "final_layer.adaLN_modulation.1.weight"},
                          "");
    EXPECT_EQ(o.at("final_layer.adaLN_modulation.1.weight"),
              "model.diffusion_model.final_layer.adaLN_modulation.1.weight");
    EXPECT_EQ(o.at("joint_blocks.0.x_block.attn.qkv.weight"),
              "model.diffusion_model.joint_blocks.0.x_block.attn.qkv.weight");
}

// model_index.json's StableDiffusion3Pipeline: transformer, VAE and the three text encoders
// land where the SD3 recipe reads them.
TEST(Sd3Names, DiffusersPipelineFolderRouted) {
    const std::string dir = test_dir("sd3_diffusers_route");
    for (const char* sub :
         {"transformer", "vae", "text_encoder", "text_encoder_2", "text_encoder_3"}) {
        make_dirs(dir + "/" + sub);
    }
    write_bytes(dir + "/model_index.json", R"({"_class_name": "StableDiffusion3Pipeline"})");
    write_safetensors(dir + "/transformer/diffusion_pytorch_model.safetensors",
                      {f16_tensor("pos_embed.proj.weight", {8, 16, 2, 2}),
                       f16_tensor("pos_embed.pos_embed", {1, 4, 8}),
                       f16_tensor("transformer_blocks.0.attn.to_q.weight", {8, 8}),
                       f16_tensor("transformer_blocks.0.norm1_context.linear.weight", {16, 8}),
                       f16_tensor("norm_out.linear.weight", {16, 8})});
    write_safetensors(dir + "/vae/diffusion_pytorch_model.safetensors",
                      {f16_tensor("decoder.conv_in.weight", {4, 16, 3, 3})});
    write_safetensors(dir + "/text_encoder/model.safetensors",
                      {f16_tensor("text_model.embeddings.token_embedding.weight", {16, 8})});
    write_safetensors(dir + "/text_encoder_2/model.safetensors",
                      {f16_tensor("text_model.embeddings.token_embedding.weight", {16, 12})});
    write_safetensors(dir + "/text_encoder_3/model.safetensors",
                      {f16_tensor("encoder.block.0.layer.0.SelfAttention.q.weight", {8, 8})});
    TensorIndex index = model_index();
    ASSERT_TRUE(index.add(dir).ok());
    const std::string d = "model.diffusion_model.";
    EXPECT_TRUE(index.has(d + "x_embedder.proj.weight"));
    EXPECT_TRUE(index.has(d + "pos_embed"));
    EXPECT_TRUE(index.has(d + "joint_blocks.0.x_block.attn.q.weight"));
    // Block 0 is the only (so the last, pre-only) block here.
    EXPECT_TRUE(index.has(d + "joint_blocks.0.context_block.adaLN_scale_shift.weight"));
    EXPECT_TRUE(index.has(d + "final_layer.adaLN_scale_shift.weight"));
    EXPECT_TRUE(index.has("first_stage_model.decoder.conv_in.weight"));
    EXPECT_TRUE(index.has("text_encoders.clip_l.text_model.embeddings.token_embedding.weight"));
    EXPECT_TRUE(index.has("text_encoders.clip_g.text_model.embeddings.token_embedding.weight"));
    EXPECT_TRUE(index.has("text_encoders.t5xxl.encoder.block.0.layer.0.SelfAttention.q.weight"));
}

// ---------------------------------------------------------------------------- LoRA keys

bool has_key(const std::vector<std::string>& keys, const std::string& k) {
    return std::find(keys.begin(), keys.end(), k) != keys.end();
}

const LoraRowKey* row_key(const std::vector<LoraRowKey>& keys, const std::string& k) {
    for (const LoraRowKey& r : keys) {
        if (r.key == k) return &r;
    }
    return nullptr;
}

TEST(Sd3LoraKeys, WholeWeightKeysOfBothForms) {
    const auto proj = sd3_lora_keys("joint_blocks.3.context_block.attn.proj.weight");
    for (const char* k : {"unet_joint_blocks_3_context_block_attn_proj",
                          "diffusion_model_joint_blocks_3_context_block_attn_proj",
                          "joint_blocks_3_context_block_attn_proj",
                          "transformer_transformer_blocks_3_attn_to_add_out",
                          "transformer_blocks_3_attn_to_add_out"}) {
        EXPECT_TRUE(has_key(proj, k)) << k;
    }
    EXPECT_TRUE(has_key(sd3_lora_keys("joint_blocks.0.x_block.attn.q.weight"),
                        "transformer_transformer_blocks_0_attn_to_q"));
    EXPECT_TRUE(has_key(sd3_lora_keys("final_layer.linear.weight"), "transformer_proj_out"));
    EXPECT_TRUE(has_key(sd3_lora_keys("t_embedder.mlp.2.weight"),
                        "transformer_time_text_embed_timestep_embedder_linear_2"));
    // A fused weight answers to no diffusers key as a whole.
    for (const std::string& k : sd3_lora_keys("joint_blocks.0.x_block.attn.qkv.weight"))
        EXPECT_EQ(k.find("transformer"), std::string::npos) << k;
}

TEST(Sd3LoraKeys, RowKeysCutFusedAndSwappedWeights) {
    const auto qkv = sd3_lora_row_keys("joint_blocks.1.context_block.attn.qkv.weight", {48, 16});
    const LoraRowKey* k = row_key(qkv, "transformer_transformer_blocks_1_attn_add_k_proj");
    ASSERT_NE(k, nullptr);
    EXPECT_EQ(k->rows, (std::vector<LoraRows>{{0, 16, 16}}));
    k = row_key(qkv, "transformer_blocks_1_attn_add_v_proj");
    ASSERT_NE(k, nullptr);
    EXPECT_EQ(k->rows, (std::vector<LoraRows>{{0, 32, 16}}));

    // Split v of a diffusers-loaded model: the last third of a fused-form LoRA.
    const auto v = sd3_lora_row_keys("joint_blocks.1.x_block.attn2.v.weight", {16, 16});
    k = row_key(v, "unet_joint_blocks_1_x_block_attn2_qkv");
    ASSERT_NE(k, nullptr);
    EXPECT_EQ(k->rows, (std::vector<LoraRows>{{32, 0, 16}}));
    EXPECT_NE(row_key(v, "model_diffusion_model_joint_blocks_1_x_block_attn2_qkv"), nullptr);

    const std::vector<LoraRows> swapped = {{0, 16, 16}, {16, 0, 16}};
    const auto fin = sd3_lora_row_keys("final_layer.adaLN_modulation.1.weight", {32, 16});
    k = row_key(fin, "transformer_norm_out_linear");
    ASSERT_NE(k, nullptr);
    EXPECT_EQ(k->rows, swapped);
    const auto fin_split = sd3_lora_row_keys("final_layer.adaLN_scale_shift.weight", {32, 16});
    k = row_key(fin_split, "unet_final_layer_adaLN_modulation_1");
    ASSERT_NE(k, nullptr);
    EXPECT_EQ(k->rows, swapped);
    // The pre-only context modulation (2 chunks) is swapped, a full one (6 chunks) is not.
    const auto pre =
        sd3_lora_row_keys("joint_blocks.5.context_block.adaLN_modulation.1.weight", {32, 16});
    k = row_key(pre, "transformer_transformer_blocks_5_norm1_context_linear");
    ASSERT_NE(k, nullptr);
    EXPECT_EQ(k->rows, swapped);
    const auto full =
        sd3_lora_row_keys("joint_blocks.4.context_block.adaLN_modulation.1.weight", {96, 16});
    k = row_key(full, "transformer_blocks_4_norm1_context_linear");
    ASSERT_NE(k, nullptr);
    EXPECT_EQ(k->rows, (std::vector<LoraRows>{{0, 0, 96}}));
    EXPECT_TRUE(sd3_lora_row_keys("joint_blocks.4.x_block.mlp.fc1.weight", {64, 16}).empty());
}

// Every linear of the SD3.5 Medium fixture layout (MMDiT-X blocks, the pre-only last block)
// answers to a kohya key and a diffusers key, and the diffusers thirds of each fused q/k/v
// cover its rows once.
TEST(Sd3LoraKeys, EveryLinearOfTheFixtureLayoutHasBothForms) {
    std::ifstream in(std::string(GGDIFF_SHARED_DIR) + "/fixtures/sd3_tiny_mmdit.tensors");
    ASSERT_TRUE(in.good());
    std::string line;
    int linears = 0;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream fields(line);
        std::string name, dims;
        fields >> name >> dims;
        std::vector<int64_t> shape;
        std::istringstream d(dims);
        for (std::string x; std::getline(d, x, ',');) shape.push_back(std::stoll(x));
        if (!ends_with(name, ".weight") || shape.size() < 2) continue;
        ++linears;
        bool kohya = false, diffusers = false;
        for (const std::string& k : sd3_lora_keys(name)) {
            kohya |= starts_with(k, "unet_");
            diffusers |= starts_with(k, "transformer_");
        }
        std::vector<int> covered(static_cast<size_t>(shape[0]), 0);
        bool by_rows = false;
        for (const LoraRowKey& k : sd3_lora_row_keys(name, shape)) {
            kohya |= starts_with(k.key, "unet_");
            // PEFT's "transformer." keys (the bare ones begin "transformer_blocks_" too).
            if (!starts_with(k.key, "transformer_") || starts_with(k.key, "transformer_blocks_"))
                continue;
            diffusers = by_rows = true;
            for (const LoraRows& r : k.rows)
                for (int64_t i = 0; i < r.count; ++i) covered[r.to + i]++;
        }
        EXPECT_TRUE(kohya) << name;
        EXPECT_TRUE(diffusers) << name;
        // Fused q/k/v, the context and final modulations: by rows, each row once.
        const bool cut = name.find(".qkv.") != std::string::npos ||
                         name.find("context_block.adaLN") != std::string::npos ||
                         name.find("final_layer.adaLN") != std::string::npos;
        EXPECT_EQ(by_rows, cut) << name;
        for (size_t i = 0; by_rows && i < covered.size(); ++i)
            ASSERT_EQ(covered[i], 1) << name << " row " << i;
    }
    EXPECT_GT(linears, 200);
}

}  // namespace
}  // namespace ggdiff
