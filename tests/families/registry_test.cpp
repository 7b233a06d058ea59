// The family registry: well-formed identities, and the families' own layouts reaching io
// (bare DiT files, diffusers forms, diffusers pipeline routes) only through model_index().
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "../io/io_test_util.h"
#include "../support/wan_vae_diffusers.h"
#include "families/registry.h"
#include "io/name_map.h"
#include "models/vae/wan_vae.h"

namespace ggdiff {
namespace {

using namespace ggdiff::testing;

TEST(FamilyRegistry, IdentitiesAreUniqueAndComplete) {
    std::set<std::string> ids, displays;
    size_t runnable = 0;
    for (const FamilyRecipe* r : family_recipes()) {
        ASSERT_NE(r, nullptr);
        EXPECT_TRUE(std::regex_match(std::string(r->id), std::regex("[a-z][a-z0-9_]*"))) << r->id;
        EXPECT_TRUE(ids.insert(r->id).second) << "duplicate id " << r->id;
        EXPECT_TRUE(displays.insert(r->display).second) << "duplicate name " << r->display;
        EXPECT_EQ(std::string(r->signature).rfind("model.diffusion_model.", 0), 0u) << r->id;
        ASSERT_NE(r->detect, nullptr) << r->id;
        EXPECT_EQ(family_by_id(r->id), r);
        runnable += r->load != nullptr;
    }
    EXPECT_EQ(family_by_id("nope"), nullptr);
    EXPECT_GE(runnable, 8u);  // sd1 sd2 sdxl qwen_image qwen_image_layered flux z_image sd3
    EXPECT_TRUE(ids.count("z_image") && ids.count("sd3"));
}

TEST(FamilyRegistry, LayoutsAreListedOnce) {
    std::set<const ModelLayout*> seen;
    for (const ModelLayout* l : model_layouts()) EXPECT_TRUE(seen.insert(l).second);
    EXPECT_GE(seen.size(), 4u);  // flux, qwen_image, z_image, sd3, wan
}

// A bare Z-Image DiT given as the main model (-m) is filed as the diffusion model: by the
// family's own layout, which io alone does not know.
TEST(FamilyRegistry, BareDitFiledByItsFamilyLayout) {
    const std::vector<std::string> names = {"cap_embedder.0.weight", "x_embedder.weight",
                                            "layers.0.attention.qkv.weight"};
    const std::vector<NameMapping> m = map_tensor_names(names, "", nullptr, model_layouts());
    EXPECT_EQ(m[0].name, "model.diffusion_model.cap_embedder.0.weight");
    EXPECT_EQ(m[2].name, "model.diffusion_model.layers.0.attention.qkv.weight");
    const std::vector<NameMapping> flux = map_tensor_names(
        {"double_blocks.0.img_attn.qkv.weight", "img_in.weight"}, "", nullptr, model_layouts());
    EXPECT_EQ(flux[0].name, "model.diffusion_model.double_blocks.0.img_attn.qkv.weight");
    // Without the registry's layouts the same names stay unfiled.
    const std::vector<NameMapping> plain = map_tensor_names(names, "");
    EXPECT_EQ(plain[0].name, "cap_embedder.0.weight");
}

// A diffusers pipeline folder is routed as its family declares: ZImagePipeline's
// text_encoder/ is the LLM even without a config.json saying so.
TEST(FamilyRegistry, DiffusersPipelineRoutedByItsFamily) {
    const std::string dir = test_dir("registry_diffusers_route");
    make_dirs(dir + "/transformer");
    make_dirs(dir + "/vae");
    make_dirs(dir + "/text_encoder");
    write_bytes(dir + "/model_index.json", R"({"_class_name": "ZImagePipeline"})");
    write_safetensors(dir + "/transformer/diffusion_pytorch_model.safetensors",
                      {f16_tensor("all_x_embedder.2-1.weight", {8, 4}),
                       f16_tensor("cap_embedder.0.weight", {8})});
    write_safetensors(dir + "/vae/diffusion_pytorch_model.safetensors",
                      {f16_tensor("decoder.conv_in.weight", {4, 4, 3, 3})});
    write_safetensors(dir + "/text_encoder/model.safetensors",
                      {f16_tensor("model.embed_tokens.weight", {16, 8})});
    TensorIndex index = model_index();
    ASSERT_TRUE(index.add(dir).ok());
    EXPECT_TRUE(index.has("text_encoders.llm.model.embed_tokens.weight"));
    EXPECT_TRUE(index.has("model.diffusion_model.x_embedder.weight"));  // diffusers renamed
    EXPECT_EQ(family_id(index), "z_image");
}

// The UNet families declare their pipelines too: an SDXL pipeline's two text encoders land
// where the SDXL recipe reads them, and a StableDiffusionPipeline with a stray
// text_encoder_2/ stays SD1 (the folder structure alone would call it SDXL).
TEST(FamilyRegistry, UnetPipelinesRoutedByTheirFamily) {
    const std::string dir = test_dir("registry_unet_route");
    for (const char* sub : {"unet", "vae", "text_encoder", "text_encoder_2"}) {
        make_dirs(dir + "/" + sub);
    }
    write_safetensors(dir + "/unet/diffusion_pytorch_model.safetensors",
                      {f16_tensor("conv_in.weight", {8, 4, 3, 3})});
    write_safetensors(dir + "/vae/diffusion_pytorch_model.safetensors",
                      {f16_tensor("decoder.conv_in.weight", {4, 4, 3, 3})});
    write_safetensors(dir + "/text_encoder/model.safetensors",
                      {f16_tensor("text_model.embeddings.token_embedding.weight", {16, 8})});
    write_safetensors(dir + "/text_encoder_2/model.safetensors",
                      {f16_tensor("text_model.embeddings.token_embedding.weight", {16, 8})});
    write_bytes(dir + "/model_index.json", R"({"_class_name": "StableDiffusionXLPipeline"})");
    TensorIndex xl = model_index();
    ASSERT_TRUE(xl.add(dir).ok());
    EXPECT_TRUE(
        xl.has("conditioner.embedders.1.transformer.text_model.embeddings.token_embedding.weight"));
    write_bytes(dir + "/model_index.json", R"({"_class_name": "StableDiffusionPipeline"})");
    TensorIndex sd = model_index();
    ASSERT_TRUE(sd.add(dir).ok());
    EXPECT_TRUE(
        sd.has("cond_stage_model.transformer.text_model.embeddings.token_embedding.weight"));
    EXPECT_FALSE(
        sd.has("conditioner.embedders.1.transformer.text_model.embeddings.token_embedding.weight"));
}

// A WanPipeline folder whose vae/ holds the VAE in diffusers AutoencoderKLWan names (the tiny
// Wan 2.1 VAE of tests/fixtures renamed): it indexes to the original names the Wan VAE reader
// takes, from the pipeline, from the pipeline given as --vae and from vae/ alone.
TEST(FamilyRegistry, WanPipelineVaeInDiffusersNames) {
    const std::string dir = test_dir("registry_wan_pipeline");
    for (const char* sub : {"transformer", "vae", "text_encoder"}) make_dirs(dir + "/" + sub);
    write_bytes(dir + "/model_index.json", R"({"_class_name": "WanPipeline"})");
    write_safetensors(dir + "/transformer/diffusion_pytorch_model.safetensors",
                      {f16_tensor("patch_embedding.weight", {8, 16, 1, 2, 2}),
                       f16_tensor("blocks.0.attn2.to_q.weight", {8, 8}),
                       f16_tensor("condition_embedder.text_embedder.linear_1.weight", {8, 8})});
    std::vector<FakeTensor> vae;
    std::ifstream list(std::string(GGDIFF_SOURCE_DIR) + "/tests/fixtures/wan_vae_tiny.tensors");
    std::string line;
    while (std::getline(list, line)) {
        std::istringstream ss(line.substr(0, line.find('#')));
        std::string name, dims, d;
        if (!(ss >> name >> dims)) continue;
        std::vector<int64_t> shape;
        std::istringstream ds(dims);
        while (std::getline(ds, d, ',')) shape.push_back(std::stoll(d));
        vae.push_back(f16_tensor(wan_vae_test::to_diffusers(name), shape));
    }
    ASSERT_EQ(vae.size(), 194u);
    write_safetensors(dir + "/vae/diffusion_pytorch_model.safetensors", vae);
    write_safetensors(dir + "/text_encoder/model.safetensors",
                      {f16_tensor("shared.weight", {16, 8})});

    TensorIndex index = model_index();
    const Status st = index.add(dir);
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_EQ(family_id(index), "wan");
    EXPECT_TRUE(index.has("model.diffusion_model.blocks.0.cross_attn.q.weight"));
    EXPECT_TRUE(index.has("text_encoders.t5xxl.shared.weight"));
    const TensorInfo* t = index.find("first_stage_model.decoder.upsamples.4.shortcut.weight");
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->source_name, "decoder.up_blocks.1.resnets.0.conv_shortcut.weight");
    auto cfg = models::detect_wan_vae(index);
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    EXPECT_EQ(cfg->decoder.size(), 15u);
    EXPECT_EQ(cfg->encoder.size(), 11u);
    EXPECT_TRUE(cfg->decoder[3].temporal && cfg->decoder[7].temporal);
    EXPECT_FALSE(cfg->decoder[11].temporal);
    EXPECT_EQ(cfg->z_dim, 16);

    for (const std::string& path : {dir, dir + "/vae/diffusion_pytorch_model.safetensors"}) {
        SCOPED_TRACE(path);
        TensorIndex alone = model_index();
        ASSERT_TRUE(alone.add(path, prefix_for_role("vae")).ok());
        EXPECT_EQ(alone.size(), 194u);
        EXPECT_TRUE(models::detect_wan_vae(alone).ok());
    }
    // The file alone as the main model (-m) is filed as the VAE, with every family's layout.
    std::vector<std::string> names;
    for (const FakeTensor& v : vae) names.push_back(v.name);
    for (const NameMapping& m : map_tensor_names(names, "", nullptr, model_layouts())) {
        EXPECT_EQ(m.name.rfind("first_stage_model.", 0), 0u) << m.name;
        EXPECT_EQ(m.name.find("_block"), std::string::npos) << m.name;
    }
    // Qwen Image's pipelines route vae/ the same way.
    write_bytes(dir + "/model_index.json", R"({"_class_name": "QwenImagePipeline"})");
    TensorIndex qwen = model_index();
    ASSERT_TRUE(qwen.add(dir).ok());
    EXPECT_TRUE(qwen.has("first_stage_model.encoder.downsamples.8.time_conv.weight"));
}

// A recognised family runs (Wan, the last detect-only one, runs since issue 30); no family at
// all names what was looked for.
TEST(FamilyRegistry, RunnableFamilySaysWhyNot) {
    const std::string dir = test_dir("registry_runnable");
    write_safetensors(dir + "/wan.safetensors",
                      {f16_tensor("patch_embedding.weight", {8, 4}),
                       f16_tensor("blocks.0.cross_attn.q.weight", {8, 8})});
    TensorIndex wan = model_index();
    ASSERT_TRUE(wan.add(dir + "/wan.safetensors").ok());
    EXPECT_EQ(family_id(wan), "wan");
    auto runnable = runnable_family(wan);
    ASSERT_TRUE(runnable.ok()) << runnable.status().message();
    EXPECT_STREQ((*runnable)->id, "wan");

    write_safetensors(dir + "/odd.safetensors", {f16_tensor("foo.weight", {8})});
    TensorIndex odd = model_index();
    ASSERT_TRUE(odd.add(dir + "/odd.safetensors").ok());
    EXPECT_EQ(family_id(odd), "unknown");
    const Status none = runnable_family(odd).status();
    EXPECT_NE(none.message().find("flux: model.diffusion_model.img_in.weight"), std::string::npos)
        << none.message();
}

}  // namespace
}  // namespace ggdiff
