// Krea2 without a model run: its file names (the DiT's own names filed under the diffusion
// model, its diffusers form renamed as stable-diffusion.cpp renames it), the LoRA keys its
// weights answer to (kohya, ComfyUI, PEFT in diffusers names), the sizes read from the weights,
// its sampling (FLUX's flow time map with mu 1.15) and its RoPE table (text at the origin, image
// patches by row and column, axes of head_dim - 12u, 6u, 6u).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "../io/io_test_util.h"
#include "families/krea2/dit.h"
#include "families/krea2/names.h"
#include "families/registry.h"
#include "io/lora_names.h"
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

TEST(Krea2Names, BareDitIsFiledUnderTheDiffusionModel) {
    const std::vector<std::string> names = {"first.weight", "txtfusion.projector.weight",
                                            "blocks.0.attn.wq.weight", "last.modulation.lin"};
    const auto m = mapped(names, "");
    for (const std::string& n : names) EXPECT_EQ(m.at(n), kDit + n);
}

// The diffusers names, as the reference renames them.
TEST(Krea2Names, DiffusersNamesAreRenamed) {
    const std::map<std::string, std::string> want = {
        {"img_in.weight", "first.weight"},
        {"time_embed.linear_1.bias", "tmlp.0.bias"},
        {"time_embed.linear_2.weight", "tmlp.2.weight"},
        {"time_mod_proj.weight", "tproj.1.weight"},
        {"txt_in.norm.scale", "txtmlp.0.scale"},
        {"txt_in.linear_1.weight", "txtmlp.1.weight"},
        {"txt_in.linear_2.bias", "txtmlp.3.bias"},
        {"text_fusion.projector.weight", "txtfusion.projector.weight"},
        {"text_fusion.refiner_blocks.1.attn.to_q.weight",
         "txtfusion.refiner_blocks.1.attn.wq.weight"},
        {"transformer_blocks.3.attn.to_out.0.weight", "blocks.3.attn.wo.weight"},
        {"transformer_blocks.3.attn.to_gate.weight", "blocks.3.attn.gate.weight"},
        {"transformer_blocks.3.attn.to_k.weight", "blocks.3.attn.wk.weight"},
        {"transformer_blocks.3.ff.down.weight", "blocks.3.mlp.down.weight"},
        {"transformer_blocks.3.mod.lin", "blocks.3.mod.lin"},
        {"final_layer.norm.weight", "last.norm.scale"},
        {"final_layer.modulation.weight", "last.modulation.lin"},
        {"final_layer.linear.weight", "last.linear.weight"},
    };
    std::vector<std::string> names;
    for (const auto& [from, to] : want) names.push_back(from);
    for (const std::string& prefix : {std::string(""), kDit}) {
        const auto m = mapped(names, prefix);
        for (const auto& [from, to] : want)
            EXPECT_EQ(m.at(from), kDit + to) << from << " (prefix '" << prefix << "')";
    }
}

TEST(Krea2Names, LoraKeysInEveryForm) {
    const std::vector<std::string> keys = krea2_lora_keys("blocks.0.attn.wq.weight");
    for (const char* k : {"unet_blocks_0_attn_wq", "diffusion_model_blocks_0_attn_wq",
                          "blocks_0_attn_wq", "transformer_transformer_blocks_0_attn_to_q"}) {
        EXPECT_NE(std::find(keys.begin(), keys.end(), k), keys.end()) << k;
    }
    const std::vector<std::string> wo =
        krea2_lora_keys("txtfusion.layerwise_blocks.1.attn.wo.weight");
    EXPECT_NE(
        std::find(wo.begin(), wo.end(), "transformer_text_fusion_layerwise_blocks_1_attn_to_out_0"),
        wo.end());
    const std::vector<std::string> first = krea2_lora_keys("first.weight");
    EXPECT_NE(std::find(first.begin(), first.end(), "transformer_img_in"), first.end());
    const std::vector<std::string> mlp = krea2_lora_keys("blocks.2.mlp.up.weight");
    EXPECT_NE(std::find(mlp.begin(), mlp.end(), "transformer_transformer_blocks_2_ff_up"),
              mlp.end());
    EXPECT_TRUE(krea2_lora_keys("blocks.0.mod.lin").empty());
}

TEST(Krea2Names, RegistryNamesTheFamily) {
    const FamilyRecipe* r = family_by_id("krea2");
    ASSERT_NE(r, nullptr);
    EXPECT_STREQ(r->display, "Krea2");
    ASSERT_NE(r->load, nullptr);
    EXPECT_STREQ(r->part_files, "diffusion-model,llm,vae");
}

// A Krea2 DiT's tensors at the given sizes.
std::vector<testing::FakeTensor> dit_tensors(int64_t width, int64_t head, int64_t kv, int64_t text,
                                             int64_t text_head, int64_t states, int64_t layers) {
    std::vector<testing::FakeTensor> t;
    auto add = [&](const std::string& n, std::vector<int64_t> shape) {
        t.push_back({n, "F16", shape, std::string(2 * testing::numel(shape), '\0')});
    };
    add("first.weight", {width, 64});
    add("last.linear.weight", {64, width});
    add("last.modulation.lin", {2, width});
    add("tmlp.0.weight", {width, 256});
    add("tproj.1.weight", {6 * width, width});
    add("txtfusion.projector.weight", {1, states});
    add("txtmlp.1.weight", {width, text});
    for (const char* kind : {"layerwise_blocks.", "refiner_blocks."}) {
        for (int i = 0; i < 2; ++i) {
            const std::string p = std::string("txtfusion.") + kind + std::to_string(i) + ".";
            add(p + "prenorm.scale", {text});
            add(p + "attn.qknorm.qnorm.scale", {text_head});
            add(p + "attn.wq.weight", {text, text});
            add(p + "attn.wk.weight", {text, text});
            add(p + "mlp.gate.weight", {896, text});
        }
    }
    for (int64_t i = 0; i < layers; ++i) {
        const std::string p = "blocks." + std::to_string(i) + ".";
        add(p + "attn.qknorm.qnorm.scale", {head});
        add(p + "attn.wq.weight", {width, width});
        add(p + "attn.wk.weight", {kv * head, width});
        add(p + "mlp.gate.weight", {768, width});
    }
    return t;
}

// The tensors written as a DiT file and indexed as --diffusion-model.
TensorIndex open(const std::vector<testing::FakeTensor>& tensors, const std::string& tag) {
    const std::string path = testing::test_dir("krea2_" + tag) + "/dit.safetensors";
    testing::write_safetensors(path, tensors);
    TensorIndex index = model_index();
    const Status st = index.add(path, kDit);
    EXPECT_TRUE(st.ok()) << st.message();
    return index;
}

TEST(Krea2Dit, SizesComeFromTheWeights) {
    const TensorIndex index = open(dit_tensors(256, 16, 4, 320, 16, 4, 3), "sizes");
    EXPECT_EQ(family_id(index), "krea2");
    auto cfg = models::detect_krea2(index, kDit);
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    EXPECT_EQ(cfg->width, 256);
    EXPECT_EQ(cfg->channels, 16);
    EXPECT_EQ(cfg->head_dim, 16);
    EXPECT_EQ(cfg->heads, 16);
    EXPECT_EQ(cfg->kv_heads, 4);
    EXPECT_EQ(cfg->mlp, 768);
    EXPECT_EQ(cfg->text_width, 320);
    EXPECT_EQ(cfg->text_states, 4);
    EXPECT_EQ(cfg->text_heads, 20);
    EXPECT_EQ(cfg->text_kv_heads, 20);
    EXPECT_EQ(cfg->text_mlp, 896);
    EXPECT_EQ(cfg->layers, 3);
    EXPECT_EQ(cfg->layerwise_blocks, 2);
    EXPECT_EQ(cfg->refiner_blocks, 2);
    EXPECT_EQ(cfg->axes_dim(), (std::vector<int>{4, 6, 6}));
    models::Krea2Config real;
    EXPECT_EQ(real.axes_dim(), (std::vector<int>{32, 48, 48}));
}

TEST(Krea2Dit, WrongShapesAreNamed) {
    std::vector<testing::FakeTensor> t = dit_tensors(256, 16, 3, 320, 16, 4, 1);  // 16 over 3
    auto bad = models::detect_krea2(open(t, "kv"), kDit);
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find("blocks.0.attn.wk.weight"), std::string::npos)
        << bad.status().message();
    t = dit_tensors(256, 16, 4, 320, 16, 4, 1);
    t.erase(std::remove_if(t.begin(), t.end(),
                           [](const testing::FakeTensor& i) { return i.name == "tproj.1.weight"; }),
            t.end());
    auto missing = models::detect_krea2(open(t, "missing"), kDit);
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.status().message().find("tproj.1.weight"), std::string::npos);
}

// Text tokens sit at the origin; image patch (y, x) turns axis 1 by y and axis 2 by x, each
// pair j of an axis of d dims at theta^(-2j / d) (theta 1000).
TEST(Krea2Dit, RopeTable) {
    models::Krea2Config cfg;
    cfg.head_dim = 16;  // axes 4, 6, 6: 8 pairs
    const models::Krea2Rope r = models::krea2_rope(cfg, 3, 2, 3);
    ASSERT_EQ(r.cos.dim(1), 8);
    ASSERT_EQ(r.cos.dim(3), 3 + 6);
    for (int64_t tk = 0; tk < 3; ++tk) {
        for (int64_t j = 0; j < 8; ++j) {
            EXPECT_FLOAT_EQ(r.cos.data[tk * 8 + j], 1.0f);
            EXPECT_FLOAT_EQ(r.sin.data[tk * 8 + j], 0.0f);
        }
    }
    // Patch (1, 2) is token 3 + 1 * 3 + 2 = 8.
    const int64_t tk = 8;
    for (int j = 0; j < 2; ++j) EXPECT_FLOAT_EQ(r.cos.data[tk * 8 + j], 1.0f);  // axis 0
    EXPECT_NEAR(r.sin.data[tk * 8 + 2], std::sin(1.0f), 1e-6);                  // axis 1, pair 0
    EXPECT_NEAR(r.sin.data[tk * 8 + 5], std::sin(2.0f), 1e-6);                  // axis 2, pair 0
    EXPECT_NEAR(r.sin.data[tk * 8 + 6], std::sin(2.0f * std::pow(1000.0f, -2.0f / 6)), 1e-6);
}

}  // namespace
}  // namespace ggdiff
