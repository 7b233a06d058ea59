// Ideogram 4 without a model run: its file names (the DiT's own names filed under the
// diffusion model, the unconditional DiT under model.diffusion_model.uncond. as
// stable-diffusion.cpp files it), the LoRA keys its weights answer to, the sizes read from the
// weights, the LLM states it stacks and its RoPE table (Qwen3-VL's interleaved sections: text
// tokens at (i, i, i), image patches at (65536, 65536 + row, 65536 + column)).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "../io/io_test_util.h"
#include "families/ideogram4/dit.h"
#include "families/ideogram4/names.h"
#include "families/registry.h"
#include "io/name_map.h"
#include "io/tensor_index.h"

namespace ggdiff {
namespace {

const std::string kDit = "model.diffusion_model.";

std::map<std::string, std::string> mapped(const std::vector<std::string>& names,
                                          const std::string& prefix) {
    std::map<std::string, std::string> out;
    for (const NameMapping& m : map_tensor_names(names, prefix, nullptr, model_layouts()))
        out[names[m.source]] = m.name;
    return out;
}

const std::vector<std::string> kNames = {"input_proj.weight", "embed_image_indicator.weight",
                                         "layers.0.attention.qkv.weight",
                                         "final_layer.linear.weight"};

TEST(Ideogram4Names, BareDitIsFiledUnderTheDiffusionModel) {
    const auto m = mapped(kNames, "");
    for (const std::string& n : kNames) EXPECT_EQ(m.at(n), kDit + n);
    const auto d = mapped(kNames, prefix_for_role("diffusion-model"));
    for (const std::string& n : kNames) EXPECT_EQ(d.at(n), kDit + n);
}

TEST(Ideogram4Names, UncondDitIsFiledWhereTheReferenceFilesIt) {
    EXPECT_EQ(prefix_for_role("uncond-diffusion-model"), kDit + "uncond.");
    const auto m = mapped(kNames, prefix_for_role("uncond-diffusion-model"));
    for (const std::string& n : kNames) EXPECT_EQ(m.at(n), kDit + "uncond." + n);
    // A file saved with the diffusion model's wrapper loses it first.
    const auto w = mapped({kDit + kNames[0]}, prefix_for_role("uncond-diffusion-model"));
    EXPECT_EQ(w.at(kDit + kNames[0]), kDit + "uncond." + kNames[0]);
}

TEST(Ideogram4Names, LoraKeysInEveryForm) {
    const std::vector<std::string> keys = ideogram4_lora_keys("layers.0.attention.qkv.weight");
    for (const char* k : {"unet_layers_0_attention_qkv", "diffusion_model_layers_0_attention_qkv",
                          "layers_0_attention_qkv", "transformer_layers_0_attention_qkv"}) {
        EXPECT_NE(std::find(keys.begin(), keys.end(), k), keys.end()) << k;
    }
    EXPECT_TRUE(ideogram4_lora_keys("llm_cond_norm.bias").empty());
}

TEST(Ideogram4Names, RegistryNamesTheFamily) {
    const FamilyRecipe* r = family_by_id("ideogram4");
    ASSERT_NE(r, nullptr);
    EXPECT_STREQ(r->display, "Ideogram 4");
    ASSERT_NE(r->load, nullptr);
    EXPECT_TRUE(r->uncond_model);
    EXPECT_STREQ(r->part_files, "diffusion-model,uncond-diffusion-model,llm,vae");
}

// An Ideogram 4 DiT's tensors at the given sizes.
std::vector<testing::FakeTensor> dit_tensors(int64_t width, int64_t head, int64_t text,
                                             int64_t layers, int64_t channels = 128) {
    std::vector<testing::FakeTensor> t;
    auto add = [&](const std::string& n, std::vector<int64_t> shape) {
        t.push_back({n, "F16", shape, std::string(2 * testing::numel(shape), '\0')});
    };
    add("input_proj.weight", {width, channels});
    add("llm_cond_norm.weight", {13 * text});
    add("llm_cond_proj.weight", {width, 13 * text});
    add("adaln_proj.weight", {32, width});
    add("embed_image_indicator.weight", {2, width});
    for (int64_t i = 0; i < layers; ++i) {
        const std::string p = "layers." + std::to_string(i) + ".";
        add(p + "attention.qkv.weight", {3 * width, width});
        add(p + "attention.norm_q.weight", {head});
        add(p + "feed_forward.w1.weight", {96, width});
    }
    add("final_layer.linear.weight", {channels, width});
    return t;
}

TensorIndex open(const std::vector<testing::FakeTensor>& tensors, const std::string& tag) {
    const std::string path = testing::test_dir("ideogram4_" + tag) + "/dit.safetensors";
    testing::write_safetensors(path, tensors);
    TensorIndex index = model_index();
    const Status st = index.add(path, kDit);
    EXPECT_TRUE(st.ok()) << st.message();
    return index;
}

TEST(Ideogram4Dit, SizesComeFromTheWeights) {
    const TensorIndex index = open(dit_tensors(64, 16, 8, 3), "sizes");
    EXPECT_EQ(family_id(index), "ideogram4");
    auto cfg = models::detect_ideogram4(index, kDit);
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    EXPECT_EQ(cfg->width, 64);
    EXPECT_EQ(cfg->head_dim, 16);
    EXPECT_EQ(cfg->heads, 4);
    EXPECT_EQ(cfg->mlp, 96);
    EXPECT_EQ(cfg->adaln, 32);
    EXPECT_EQ(cfg->channels, 128);
    EXPECT_EQ(cfg->text_width, 8);
    EXPECT_EQ(cfg->text_states, 13);
    EXPECT_EQ(cfg->layers, 3);
}

TEST(Ideogram4Dit, WrongShapesAreNamed) {
    auto cfg = models::detect_ideogram4(open(dit_tensors(64, 16, 8, 1, 64), "channels"), kDit);
    ASSERT_FALSE(cfg.ok());
    EXPECT_NE(cfg.status().message().find("input_proj.weight: 64 latent channels"),
              std::string::npos)
        << cfg.status().message();
    auto t = dit_tensors(64, 16, 8, 1);
    t.erase(std::remove_if(t.begin(), t.end(),
                           [](const testing::FakeTensor& f) {
                               return f.name == "layers.0.attention.norm_q.weight";
                           }),
            t.end());
    auto missing = models::detect_ideogram4(open(t, "missing"), kDit);
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.status().message().find(
                  "missing tensor model.diffusion_model.layers.0.attention.norm_q.weight"),
              std::string::npos)
        << missing.status().message();
}

TEST(Ideogram4Dit, StacksTheReferencesThirteenLlmStates) {
    // The reference's out_layers {1, 4, ..., 34, 36} (after that many layers) as 0-based outputs.
    const std::vector<int> want = {0, 3, 6, 9, 12, 15, 18, 21, 24, 27, 30, 33, 35};
    EXPECT_EQ(models::ideogram4_llm_layers(), want);
}

TEST(Ideogram4Dit, RopeTable) {
    models::Ideogram4Config cfg;
    cfg.head_dim = 256;  // 128 pairs: pairs 0..59 cycle t, h, w; the rest turn with t
    const int64_t pairs = 128;
    const models::Ideogram4Rope r = models::ideogram4_rope(cfg, 2, 2, 3);
    ASSERT_EQ(r.cos.dim(0), pairs);
    ASSERT_EQ(r.cos.dim(2), 2 + 6);
    const float step = (254.0f / 256.0f) / 127.0f;
    auto omega = [&](int j) { return 1.0f / std::pow(5000000.0f, static_cast<float>(j) * step); };
    // Text token 1 at (1, 1, 1): plain RoPE at position 1.
    for (int j : {0, 1, 2, 59, 60, 127}) {
        EXPECT_NEAR(r.sin.data[1 * pairs + j], std::sin(omega(j)), 1e-6) << j;
    }
    // Patch (1, 2) is token 2 + 1 * 3 + 2 = 7: (65536, 65537, 65538).
    const int64_t tk = 7;
    EXPECT_NEAR(r.cos.data[tk * pairs + 0], std::cos(65536.0f * omega(0)), 1e-6);
    EXPECT_NEAR(r.cos.data[tk * pairs + 1], std::cos(65537.0f * omega(1)), 1e-6);
    EXPECT_NEAR(r.cos.data[tk * pairs + 2], std::cos(65538.0f * omega(2)), 1e-6);
    EXPECT_NEAR(r.cos.data[tk * pairs + 3], std::cos(65536.0f * omega(3)), 1e-6);
    EXPECT_NEAR(r.cos.data[tk * pairs + 58], std::cos(65537.0f * omega(58)), 1e-6);
    EXPECT_NEAR(r.cos.data[tk * pairs + 59], std::cos(65538.0f * omega(59)), 1e-6);
    EXPECT_NEAR(r.cos.data[tk * pairs + 61], std::cos(65536.0f * omega(61)), 1e-6);
    EXPECT_NEAR(r.cos.data[tk * pairs + 62], std::cos(65536.0f * omega(62)), 1e-6);
}

}  // namespace
}  // namespace ggdiff
