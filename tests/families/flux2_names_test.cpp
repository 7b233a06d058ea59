// FLUX.2 names: diffusers Flux2Transformer2DModel -> BFL's single-file names (q/k/v of a
// double block kept apart, norm_out under a (scale, shift) name of its own), ahead of FLUX.1's
// diffusers form whose detection FLUX.2's names would also satisfy; the diffusers pipeline
// folder; and the LoRA keys of both forms (kohya / ComfyUI and diffusers / PEFT, with row
// keys for fused q/k/v and the swapped final modulation), checked over the golden fixture's
// layout and back through the rename (names map round trip).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "../io/io_test_util.h"
#include "families/flux/names.h"
#include "families/flux2/names.h"
#include "io/name_map.h"
#include "io/name_util.h"
#include "io/tensor_index.h"

namespace ggdiff {
namespace {

using testing::f16_tensor;

const std::string kP = "model.diffusion_model.";
// FLUX.2 first, as the registry lists the layouts (recipe order).
const ModelLayouts kLayouts = {&kFlux2Layout, &kFluxLayout};

std::map<std::string, std::string> mapped(const std::vector<std::string>& names,
                                          const std::string& prefix) {
    std::map<std::string, std::string> out;
    for (const NameMapping& m : map_tensor_names(names, prefix, nullptr, kLayouts))
        out[names[m.source]] = m.name;
    return out;
}

const std::vector<std::string> kDiffusers = {
    "x_embedder.weight",
    "context_embedder.weight",
    "time_guidance_embed.timestep_embedder.linear_1.weight",
    "time_guidance_embed.timestep_embedder.linear_2.weight",
    "time_guidance_embed.guidance_embedder.linear_1.weight",
    "double_stream_modulation_img.linear.weight",
    "double_stream_modulation_txt.linear.weight",
    "single_stream_modulation.linear.weight",
    "transformer_blocks.4.attn.to_q.weight",
    "transformer_blocks.4.attn.to_v.weight",
    "transformer_blocks.4.attn.add_k_proj.weight",
    "transformer_blocks.4.attn.norm_q.weight",
    "transformer_blocks.4.attn.norm_added_k.weight",
    "transformer_blocks.4.attn.to_out.0.weight",
    "transformer_blocks.4.attn.to_add_out.weight",
    "transformer_blocks.4.ff.linear_in.weight",
    "transformer_blocks.4.ff.linear_out.weight",
    "transformer_blocks.4.ff_context.linear_in.weight",
    "transformer_blocks.4.ff_context.linear_out.weight",
    "single_transformer_blocks.11.attn.to_qkv_mlp_proj.weight",
    "single_transformer_blocks.11.attn.to_out.weight",
    "single_transformer_blocks.11.attn.norm_q.weight",
    "single_transformer_blocks.11.attn.norm_k.weight",
    "norm_out.linear.weight",
    "proj_out.weight",
};

const std::map<std::string, std::string> kOriginal = {
    {"x_embedder.weight", "img_in.weight"},
    {"context_embedder.weight", "txt_in.weight"},
    {"time_guidance_embed.timestep_embedder.linear_1.weight", "time_in.in_layer.weight"},
    {"time_guidance_embed.timestep_embedder.linear_2.weight", "time_in.out_layer.weight"},
    {"time_guidance_embed.guidance_embedder.linear_1.weight", "guidance_in.in_layer.weight"},
    {"double_stream_modulation_img.linear.weight", "double_stream_modulation_img.lin.weight"},
    {"double_stream_modulation_txt.linear.weight", "double_stream_modulation_txt.lin.weight"},
    {"single_stream_modulation.linear.weight", "single_stream_modulation.lin.weight"},
    {"transformer_blocks.4.attn.to_q.weight", "double_blocks.4.img_attn.q.weight"},
    {"transformer_blocks.4.attn.to_v.weight", "double_blocks.4.img_attn.v.weight"},
    {"transformer_blocks.4.attn.add_k_proj.weight", "double_blocks.4.txt_attn.k.weight"},
    {"transformer_blocks.4.attn.norm_q.weight", "double_blocks.4.img_attn.norm.query_norm.scale"},
    {"transformer_blocks.4.attn.norm_added_k.weight",
     "double_blocks.4.txt_attn.norm.key_norm.scale"},
    {"transformer_blocks.4.attn.to_out.0.weight", "double_blocks.4.img_attn.proj.weight"},
    {"transformer_blocks.4.attn.to_add_out.weight", "double_blocks.4.txt_attn.proj.weight"},
    {"transformer_blocks.4.ff.linear_in.weight", "double_blocks.4.img_mlp.0.weight"},
    {"transformer_blocks.4.ff.linear_out.weight", "double_blocks.4.img_mlp.2.weight"},
    {"transformer_blocks.4.ff_context.linear_in.weight", "double_blocks.4.txt_mlp.0.weight"},
    {"transformer_blocks.4.ff_context.linear_out.weight", "double_blocks.4.txt_mlp.2.weight"},
    {"single_transformer_blocks.11.attn.to_qkv_mlp_proj.weight", "single_blocks.11.linear1.weight"},
    {"single_transformer_blocks.11.attn.to_out.weight", "single_blocks.11.linear2.weight"},
    {"single_transformer_blocks.11.attn.norm_q.weight", "single_blocks.11.norm.query_norm.scale"},
    {"single_transformer_blocks.11.attn.norm_k.weight", "single_blocks.11.norm.key_norm.scale"},
    {"norm_out.linear.weight", "final_layer.adaLN_scale_shift.weight"},
    {"proj_out.weight", "final_layer.linear.weight"},
};

TEST(Flux2Names, DiffusersTransformerToOriginalNames) {
    const auto m = mapped(kDiffusers, kP);
    ASSERT_EQ(m.size(), kDiffusers.size());
    for (const auto& [from, to] : kOriginal) EXPECT_EQ(m.at(from), kP + to) << from;
    // Given as -m, a bare diffusers FLUX.2 transformer is filed under the diffusion model.
    EXPECT_EQ(mapped(kDiffusers, "").at("x_embedder.weight"), kP + "img_in.weight");
    // BFL names pass through untouched, bare or wrapped.
    const auto o = mapped({"double_stream_modulation_img.lin.weight",
                           "double_blocks.0.img_attn.qkv.weight", "single_blocks.1.linear1.weight"},
                          "");
    EXPECT_EQ(o.at("double_blocks.0.img_attn.qkv.weight"),
              kP + "double_blocks.0.img_attn.qkv.weight");
    EXPECT_EQ(o.at("double_stream_modulation_img.lin.weight"),
              kP + "double_stream_modulation_img.lin.weight");
}

TEST(Flux2Names, DetectsTheDiffusersFormOnly) {
    EXPECT_TRUE(DiffusersFlux2Map::detect(kDiffusers));
    EXPECT_TRUE(DiffusersFlux2Map::detect(
        {"single_transformer_blocks.0.attn.to_qkv_mlp_proj.weight", "x_embedder.weight"}));
    // FLUX.1's diffusers form (x_embedder, single blocks) and BFL names are not it ...
    const std::vector<std::string> flux1 = {"x_embedder.weight",
                                            "transformer_blocks.0.norm1.linear.weight",
                                            "single_transformer_blocks.0.proj_out.weight",
                                            "single_transformer_blocks.0.proj_mlp.weight"};
    EXPECT_FALSE(DiffusersFlux2Map::detect(flux1));
    EXPECT_FALSE(DiffusersFlux2Map::detect(
        {"double_stream_modulation_img.lin.weight", "single_blocks.0.linear1.weight"}));
    // ... and FLUX.1's still renames as FLUX.1 with FLUX.2's layout ahead of it.
    EXPECT_EQ(mapped(flux1, kP).at("single_transformer_blocks.0.proj_mlp.weight"),
              kP + "single_blocks.0.mlp_in.weight");
}

// model_index.json's Flux2KleinPipeline: transformer, VAE and text encoder routed.
TEST(Flux2Names, DiffusersPipelineFolderRouted) {
    const std::string dir = testing::test_dir("flux2_diffusers_route");
    for (const char* sub : {"transformer", "vae", "text_encoder"})
        testing::make_dirs(dir + "/" + sub);
    testing::write_bytes(dir + "/model_index.json", R"({"_class_name": "Flux2KleinPipeline"})");
    testing::write_safetensors(dir + "/transformer/diffusion_pytorch_model.safetensors",
                               {f16_tensor("x_embedder.weight", {8, 16}),
                                f16_tensor("double_stream_modulation_img.linear.weight", {48, 8}),
                                f16_tensor("transformer_blocks.0.attn.to_q.weight", {8, 8}),
                                f16_tensor("norm_out.linear.weight", {16, 8})});
    testing::write_safetensors(dir + "/vae/diffusion_pytorch_model.safetensors",
                               {f16_tensor("decoder.conv_in.weight", {4, 16, 3, 3})});
    testing::write_safetensors(dir + "/text_encoder/model.safetensors",
                               {f16_tensor("model.embed_tokens.weight", {16, 8})});
    TensorIndex index(kLayouts);
    Status st = index.add(dir);
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_TRUE(index.has(kP + "img_in.weight"));
    EXPECT_TRUE(index.has(kP + "double_stream_modulation_img.lin.weight"));
    EXPECT_TRUE(index.has(kP + "double_blocks.0.img_attn.q.weight"));
    EXPECT_TRUE(index.has(kP + "final_layer.adaLN_scale_shift.weight"));
    EXPECT_TRUE(index.has("first_stage_model.decoder.conv_in.weight"));
    EXPECT_TRUE(index.has_prefix("text_encoders.llm."));
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

TEST(Flux2LoraKeys, WholeWeightKeysOfBothForms) {
    const auto proj = flux2_lora_keys("double_blocks.3.txt_attn.proj.weight");
    for (const std::string k :
         {"lora_unet_double_blocks_3_txt_attn_proj",
          "diffusion_model.double_blocks.3.txt_attn.proj", "double_blocks.3.txt_attn.proj",
          "transformer.transformer_blocks.3.attn.to_add_out",
          "base_model.model.transformer_blocks.3.attn.to_add_out"}) {
        EXPECT_TRUE(has_key(proj, normalize_lora_key(k))) << k;
    }
    EXPECT_TRUE(has_key(
        flux2_lora_keys("single_blocks.7.linear1.weight"),
        normalize_lora_key("transformer.single_transformer_blocks.7.attn.to_qkv_mlp_proj")));
    EXPECT_TRUE(has_key(flux2_lora_keys("double_blocks.0.img_attn.k.weight"),
                        normalize_lora_key("transformer.transformer_blocks.0.attn.to_k")));
    EXPECT_TRUE(has_key(flux2_lora_keys("single_stream_modulation.lin.weight"),
                        normalize_lora_key("transformer.single_stream_modulation.linear")));
    EXPECT_TRUE(has_key(flux2_lora_keys("final_layer.adaLN_scale_shift.weight"),
                        normalize_lora_key("transformer.norm_out.linear")));
    // A fused weight and the original final modulation answer to no diffusers key as a whole.
    for (const char* w :
         {"double_blocks.0.img_attn.qkv.weight", "final_layer.adaLN_modulation.1.weight"})
        for (const std::string& k : flux2_lora_keys(w))
            EXPECT_EQ(k.find("transformer"), std::string::npos) << w << ": " << k;
    EXPECT_TRUE(flux2_lora_keys("double_blocks.0.img_attn.norm.key_norm.scale").empty());
}

TEST(Flux2LoraKeys, RowKeysCutFusedAndSwappedWeights) {
    const auto qkv = flux2_lora_row_keys("double_blocks.1.img_attn.qkv.weight", {48, 16});
    const LoraRowKey* k =
        row_key(qkv, normalize_lora_key("transformer.transformer_blocks.1.attn.to_k"));
    ASSERT_NE(k, nullptr);
    EXPECT_EQ(k->rows, (std::vector<LoraRows>{{0, 16, 16}}));
    const auto tqkv = flux2_lora_row_keys("double_blocks.1.txt_attn.qkv.weight", {48, 16});
    k = row_key(tqkv, normalize_lora_key("transformer_blocks.1.attn.add_v_proj"));
    ASSERT_NE(k, nullptr);
    EXPECT_EQ(k->rows, (std::vector<LoraRows>{{0, 32, 16}}));

    // Split v of a diffusers-loaded model: the last third of a fused-form (kohya) LoRA.
    const auto v = flux2_lora_row_keys("double_blocks.1.txt_attn.v.weight", {16, 16});
    k = row_key(v, normalize_lora_key("lora_unet_double_blocks_1_txt_attn_qkv"));
    ASSERT_NE(k, nullptr);
    EXPECT_EQ(k->rows, (std::vector<LoraRows>{{32, 0, 16}}));

    const std::vector<LoraRows> swapped = {{0, 16, 16}, {16, 0, 16}};
    const auto fin = flux2_lora_row_keys("final_layer.adaLN_modulation.1.weight", {32, 16});
    k = row_key(fin, normalize_lora_key("transformer.norm_out.linear"));
    ASSERT_NE(k, nullptr);
    EXPECT_EQ(k->rows, swapped);
    const auto fin_split = flux2_lora_row_keys("final_layer.adaLN_scale_shift.weight", {32, 16});
    k = row_key(fin_split, normalize_lora_key("lora_unet_final_layer_adaLN_modulation_1"));
    ASSERT_NE(k, nullptr);
    EXPECT_EQ(k->rows, swapped);
    EXPECT_TRUE(flux2_lora_row_keys("single_blocks.0.linear1.weight", {64, 16}).empty());
    EXPECT_TRUE(flux2_lora_row_keys("double_blocks.0.img_mlp.0.weight", {64, 16}).empty());
}

// Every linear of the golden fixture's DiT answers to a kohya key and a diffusers key (the
// thirds of each fused q/k/v and the swapped halves of the final modulation cover its rows
// once), and every diffusers key a whole weight answers to names a diffusers module that the
// rename maps back to that weight.
TEST(Flux2LoraKeys, EveryLinearOfTheFixtureLayoutHasBothForms) {
    std::ifstream in(std::string(GGDIFF_SHARED_DIR) + "/fixtures/flux2_tiny_dit.tensors");
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
        for (const std::string& k : flux2_lora_keys(name)) {
            kohya |= k == "unet_" + normalize_lora_key(name.substr(0, name.size() - 7));
            if (!starts_with(k, "transformer_") || starts_with(k, "transformer_blocks_")) continue;
            diffusers = true;
        }
        std::vector<int> covered(static_cast<size_t>(shape[0]), 0);
        bool by_rows = false;
        for (const LoraRowKey& k : flux2_lora_row_keys(name, shape)) {
            if (!starts_with(k.key, "transformer_") || starts_with(k.key, "transformer_blocks_"))
                continue;
            diffusers = by_rows = true;
            for (const LoraRows& r : k.rows)
                for (int64_t i = 0; i < r.count; ++i) covered[r.to + i]++;
        }
        EXPECT_TRUE(kohya) << name;
        EXPECT_TRUE(diffusers) << name;
        const bool cut = name.find(".qkv.") != std::string::npos ||
                         name.find("final_layer.adaLN") != std::string::npos;
        EXPECT_EQ(by_rows, cut) << name;
        for (size_t i = 0; by_rows && i < covered.size(); ++i)
            ASSERT_EQ(covered[i], 1) << name << " row " << i;
    }
    EXPECT_EQ(linears, 29);

    // Round trip: each diffusers name maps to a weight whose keys include that module.
    for (const auto& [from, to] : kOriginal) {
        if (!ends_with(to, ".weight")) continue;
        std::string back;
        ASSERT_TRUE(DiffusersFlux2Map::map(from, &back)) << from;
        EXPECT_EQ(back, to);
        const std::string module = "transformer." + from.substr(0, from.size() - 7);
        EXPECT_TRUE(has_key(flux2_lora_keys(to), normalize_lora_key(module))) << to;
    }
}

}  // namespace
}  // namespace ggdiff
