// MiniT2I without a model run: its file names (the transformer file's "model.net." names filed
// under the diffusion model, names without the wrapper given it, a single file's T5 under
// text_encoders.t5xxl.), the LoRA keys its weights answer to (kohya, ComfyUI, PEFT, with and
// without the wrapper), its sampling (the clean-image prediction, sigma 1 -> 0 in even steps
// whatever the schedule, twice the noise at the start, img2img too) and its position tables
// (the 2-D sin-cos embedding, RoPE over text and image tokens) checked value by value.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "families/minit2i/dit.h"
#include "families/minit2i/names.h"
#include "families/registry.h"
#include "io/lora_names.h"
#include "io/name_map.h"
#include "sampling/parameterization.h"
#include "sampling/schedules.h"

namespace ggdiff {
namespace {

const std::string kDit = "model.diffusion_model.model.net.";

std::map<std::string, std::string> mapped(const std::vector<std::string>& names,
                                          const std::string& prefix) {
    std::map<std::string, std::string> out;
    for (const NameMapping& m : map_tensor_names(names, prefix, nullptr, model_layouts()))
        out[names[m.source]] = m.name;
    return out;
}

TEST(MiniT2INames, TransformerFileIsFiledUnderTheDiffusionModel) {
    const std::vector<std::string> names = {"model.net.img_embedder.proj1.weight",
                                            "model.net.double_blocks.0.img_qkv.weight",
                                            "model.net.mask_token"};
    for (const std::string& prefix : {std::string(""), std::string("model.diffusion_model.")}) {
        const auto m = mapped(names, prefix);
        EXPECT_EQ(m.at("model.net.img_embedder.proj1.weight"), kDit + "img_embedder.proj1.weight")
            << "prefix '" << prefix << "'";
        EXPECT_EQ(m.at("model.net.double_blocks.0.img_qkv.weight"),
                  kDit + "double_blocks.0.img_qkv.weight");
        EXPECT_EQ(m.at("model.net.mask_token"), kDit + "mask_token");
    }
}

TEST(MiniT2INames, UnwrappedNamesGetTheWrapper) {
    const auto net = mapped(
        {"net.img_embedder.proj1.weight", "net.txt_preamble_blocks.1.qkv.bias", "net.mask_token"},
        "");
    EXPECT_EQ(net.at("net.img_embedder.proj1.weight"), kDit + "img_embedder.proj1.weight");
    EXPECT_EQ(net.at("net.txt_preamble_blocks.1.qkv.bias"),
              kDit + "txt_preamble_blocks.1.qkv.bias");
    EXPECT_EQ(net.at("net.mask_token"), kDit + "mask_token");
    const auto top =
        mapped({"img_embedder.proj1.weight", "final_layer.linear.weight", "mask_token"},
               "model.diffusion_model.");
    EXPECT_EQ(top.at("img_embedder.proj1.weight"), kDit + "img_embedder.proj1.weight");
    EXPECT_EQ(top.at("final_layer.linear.weight"), kDit + "final_layer.linear.weight");
    EXPECT_EQ(top.at("mask_token"), kDit + "mask_token");
}

// The reference's single file: the DiT under its full name, T5 under "transformer.".
TEST(MiniT2INames, SingleFileKeepsTheReferenceNames) {
    const auto m = mapped({kDit + "img_embedder.proj1.weight",
                           "text_encoders.t5xxl.transformer.encoder.block.0.layer.0.SelfAttention."
                           "q.weight",
                           "text_encoders.t5xxl.transformer.shared.weight"},
                          "");
    EXPECT_EQ(m.at(kDit + "img_embedder.proj1.weight"), kDit + "img_embedder.proj1.weight");
    EXPECT_EQ(m.at("text_encoders.t5xxl.transformer.shared.weight"),
              "text_encoders.t5xxl.shared.weight");
}

TEST(MiniT2INames, RegistryNamesTheFamily) {
    const FamilyRecipe* r = family_by_id("minit2i");
    ASSERT_NE(r, nullptr);
    EXPECT_STREQ(r->display, "MiniT2I");
    ASSERT_NE(r->load, nullptr);
    EXPECT_EQ(r->layout, &kMiniT2ILayout);
}

TEST(MiniT2ILora, KeysOfEveryForm) {
    const std::vector<std::string> keys =
        minit2i_lora_keys("model.net.double_blocks.3.img_qkv.weight");
    for (const char* module :
         {"lora_unet_double_blocks_3_img_qkv", "diffusion_model.double_blocks.3.img_qkv",
          "diffusion_model.model.net.double_blocks.3.img_qkv",
          "lora_unet_net_double_blocks_3_img_qkv", "transformer.double_blocks.3.img_qkv",
          "base_model.model.double_blocks.3.img_qkv", "model.net.double_blocks.3.img_qkv",
          "double_blocks.3.img_qkv"}) {
        const std::string k = normalize_lora_key(module);
        EXPECT_NE(std::find(keys.begin(), keys.end(), k), keys.end()) << module << " -> " << k;
    }
    EXPECT_TRUE(minit2i_lora_keys("model.net.double_blocks.3.img_qkv.bias").empty());
    EXPECT_TRUE(minit2i_lora_keys("other.weight").empty());
}

TEST(MiniT2ISampling, CleanImagePredictionOnEvenSteps) {
    const auto p = sampling::Parameterization::x0_linear(2.0f);
    EXPECT_FALSE(p.is_flow());  // the reference's ancestral steps are the non-flow ones
    const auto s = p.scalings(0.37f);
    EXPECT_EQ(s.c_skip, 0.0f);
    EXPECT_EQ(s.c_out, 1.0f);
    EXPECT_EQ(s.c_in, 1.0f);
    EXPECT_FLOAT_EQ(p.sigma_to_t(0.25f), 0.75f);
    EXPECT_FLOAT_EQ(p.sigma_max(), 1.0f);
    EXPECT_FLOAT_EQ(p.sigma_min(), 0.0f);
    const std::vector<float> want = {1.0f, 0.75f, 0.5f, 0.25f, 0.0f};
    for (auto kind : {sampling::ScheduleKind::Discrete, sampling::ScheduleKind::Karras,
                      sampling::ScheduleKind::SgmUniform, sampling::ScheduleKind::Simple}) {
        auto sig = sampling::make_sigmas(kind, 4, p);
        ASSERT_TRUE(sig.ok()) << sig.status().message();
        EXPECT_EQ(*sig, want) << sampling::schedule_name(kind);
    }
    // Twice the noise, with or without an init latent (the reference ignores it).
    const std::vector<float> noise = {0.5f, -1.0f}, init = {0.9f, 0.9f};
    EXPECT_EQ(p.noise_latent({}, noise, 1.0f), (std::vector<float>{1.0f, -2.0f}));
    EXPECT_EQ(p.noise_latent(init, noise, 0.5f), (std::vector<float>{1.0f, -2.0f}));
    EXPECT_EQ(p.inverse_noise_scaling(0.0f, noise), noise);
}

models::MiniT2IConfig tiny() {
    models::MiniT2IConfig c;
    c.width = 16;
    c.head_dim = 8;
    c.heads = 2;
    return c;
}

TEST(MiniT2IPositions, SinCosEmbedding) {
    const models::MiniT2IConfig c = tiny();
    const HostTensor e = models::minit2i_pos_embed(c, 2, 3);  // 2 rows of 3
    ASSERT_EQ(e.numel(), 16 * 6);
    // Token (row 1, column 2) = 5: [sin x, cos x, sin y, cos y] over 4 frequencies each,
    // omega_i = 10000^(-i/4).
    const float* t = e.ptr() + 5 * 16;
    for (int i = 0; i < 4; ++i) {
        const float omega = 1.0f / std::pow(10000.0f, i / 4.0f);
        EXPECT_NEAR(t[i], std::sin(2 * omega), 1e-6);
        EXPECT_NEAR(t[4 + i], std::cos(2 * omega), 1e-6);
        EXPECT_NEAR(t[8 + i], std::sin(1 * omega), 1e-6);
        EXPECT_NEAR(t[12 + i], std::cos(1 * omega), 1e-6);
    }
}

TEST(MiniT2IPositions, RopeOverTextAndImage) {
    const models::MiniT2IConfig c = tiny();  // heads of 8: 4 pairs
    const models::MiniT2IRope r = models::minit2i_rope(c, 3, 2, 2);
    ASSERT_EQ(r.cos.numel(), 4 * (3 + 4));
    // Text token 2: every pair at position 2, pair i turning at 10000^(-2i/8).
    for (int i = 0; i < 4; ++i) {
        const float a = 2.0f / std::pow(10000.0f, 2.0f * i / 8.0f);
        EXPECT_NEAR(r.cos.data[2 * 4 + i], std::cos(a), 1e-6);
        EXPECT_NEAR(r.sin.data[2 * 4 + i], std::sin(a), 1e-6);
    }
    // Image token (row 1, column 0) = sequence position 3 + 2: the row on pairs 0-1, the
    // column on pairs 2-3, pair j of each turning at 10000^(-2j/4).
    const size_t at = (3 + 2) * 4;
    for (int j = 0; j < 2; ++j) {
        const float w = 1.0f / std::pow(10000.0f, 2.0f * j / 4.0f);
        EXPECT_NEAR(r.cos.data[at + j], std::cos(1 * w), 1e-6);
        EXPECT_NEAR(r.sin.data[at + j], std::sin(1 * w), 1e-6);
        EXPECT_NEAR(r.cos.data[at + 2 + j], 1.0f, 1e-6);
        EXPECT_NEAR(r.sin.data[at + 2 + j], 0.0f, 1e-6);
    }
}

}  // namespace
}  // namespace ggdiff
