// The Qwen3-VL vision tower (Boogu Image's and HiDream-O1-Image's reference images): sizes
// detected from a small file in both patch-embedding layouts (Conv3d with its bias, two Conv2d
// with a shared bias) and errors that name the tensor; the host inputs: patches in merge-unit
// order (the Qwen2.5-VL tower's), the bilinear position-table weights worked out by hand, the
// 2-D RoPE angles; the tower's numbers are checked against stable-diffusion.cpp by the Boogu
// Image golden set (tests/golden/boogu_tiny, cases boogu_vision_*).
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "../io/io_test_util.h"
#include "models/te/qwen3_vision.h"
#include "models/te/qwen_vision.h"

namespace ggdiff::models {
namespace {

using testing::FakeTensor;

const std::string kRole = "text_encoders.llm.";
constexpr int64_t kWidth = 64, kMlp = 96, kOut = 80;

std::vector<std::pair<std::string, std::vector<int64_t>>> tower_shapes(bool split_patch) {
    const int64_t w = kWidth, wide = 4 * kWidth;
    std::vector<std::pair<std::string, std::vector<int64_t>>> t;
    if (split_patch) {
        t = {{"patch_embed.proj.0.weight", {w, 3, 16, 16}},
             {"patch_embed.proj.1.weight", {w, 3, 16, 16}},
             {"patch_embed.bias", {w}}};
    } else {
        t = {{"patch_embed.proj.weight", {w, 3, 2, 16, 16}}, {"patch_embed.proj.bias", {w}}};
    }
    t.push_back({"pos_embed.weight", {9, w}});
    for (int i = 0; i < 2; ++i) {
        const std::string b = "blocks." + std::to_string(i) + ".";
        for (const char* n : {"norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias",
                              "attn.proj.bias", "mlp.linear_fc2.bias"}) {
            t.push_back({b + n, {w}});
        }
        t.push_back({b + "attn.qkv.weight", {3 * w, w}});
        t.push_back({b + "attn.qkv.bias", {3 * w}});
        t.push_back({b + "attn.proj.weight", {w, w}});
        t.push_back({b + "mlp.linear_fc1.weight", {kMlp, w}});
        t.push_back({b + "mlp.linear_fc1.bias", {kMlp}});
        t.push_back({b + "mlp.linear_fc2.weight", {w, kMlp}});
    }
    t.push_back({"merger.norm.weight", {w}});
    t.push_back({"merger.norm.bias", {w}});
    t.push_back({"merger.linear_fc1.weight", {wide, wide}});
    t.push_back({"merger.linear_fc1.bias", {wide}});
    t.push_back({"merger.linear_fc2.weight", {kOut, wide}});
    t.push_back({"merger.linear_fc2.bias", {kOut}});
    // The Hugging Face tower's deepstack mergers: present in real files, never read.
    t.push_back({"deepstack_merger_list.0.norm.weight", {wide}});
    return t;
}

class Qwen3Vision : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ = testing::test_dir(std::string("qwen3_vision_") +
                                 ::testing::UnitTest::GetInstance()->current_test_info()->name());
    }
    // A tower file (patterned values: only shapes matter here), `drop` left out, `reshape` given
    // another shape.
    TensorIndex tower(const std::string& tag, bool split_patch = false,
                      const std::string& drop = "", const std::string& reshape = "",
                      const std::map<std::string, std::vector<int64_t>>& shapes = {}) {
        std::vector<FakeTensor> out;
        for (auto [name, shape] : tower_shapes(split_patch)) {
            if (name == drop) continue;
            if (name == reshape) shape[0] += 1;
            if (auto it = shapes.find(name); it != shapes.end()) shape = it->second;
            out.push_back(testing::f32_tensor("visual." + name, shape));
        }
        const std::string path = dir_ + "/" + tag + ".safetensors";
        testing::write_safetensors(path, out);
        TensorIndex index;
        Status st = index.add(path, kRole);
        EXPECT_TRUE(st.ok()) << st.message();
        return index;
    }
    std::string error_of(const TensorIndex& index) {
        auto cfg = detect_qwen3_vision(index, kRole);
        EXPECT_FALSE(cfg.ok());
        return cfg.ok() ? "" : cfg.status().message();
    }
    std::string dir_;
};

TEST_F(Qwen3Vision, GgufHoldsTheConv3dInFourDimensions) {
    // GGUF files merge the Conv3d's [width, 3, 2, p, p] into ggml's four dimensions.
    const TensorIndex index =
        tower("gguf", false, "", "", {{"patch_embed.proj.weight", {kWidth * 3, 2, 16, 16}}});
    auto cfg = detect_qwen3_vision(index, kRole);
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    EXPECT_EQ(cfg->patch, 16);
    EXPECT_FALSE(cfg->split_patch_embed);
}

TEST_F(Qwen3Vision, SizesFromTheWeightsInBothPatchLayouts) {
    for (bool split : {false, true}) {
        const TensorIndex index = tower(split ? "split" : "conv3d", split);
        ASSERT_TRUE(has_qwen3_vision(index, kRole));
        auto cfg = detect_qwen3_vision(index, kRole);
        ASSERT_TRUE(cfg.ok()) << cfg.status().message();
        EXPECT_EQ(cfg->prefix, kRole + "visual.");
        EXPECT_EQ(cfg->width, kWidth);
        EXPECT_EQ(cfg->heads, 16);
        EXPECT_EQ(cfg->layers, 2);
        EXPECT_EQ(cfg->mlp, kMlp);
        EXPECT_EQ(cfg->out_dim, kOut);
        EXPECT_EQ(cfg->grid_side, 3);
        EXPECT_EQ(cfg->patch, 16);
        EXPECT_EQ(cfg->factor(), 32);
        EXPECT_EQ(cfg->split_patch_embed, split);
    }
}

TEST_F(Qwen3Vision, ErrorsNameTheTensor) {
    TensorIndex none;
    EXPECT_FALSE(has_qwen3_vision(none, kRole));
    EXPECT_NE(error_of(none).find("text_encoders.llm.visual.pos_embed.weight"), std::string::npos);
    const std::string b = kRole + "visual.";
    EXPECT_NE(error_of(tower("nobias", false, "patch_embed.proj.bias"))
                  .find("missing tensor " + b + "patch_embed.proj.bias"),
              std::string::npos);
    EXPECT_NE(error_of(tower("fc2", false, "blocks.1.mlp.linear_fc2.weight"))
                  .find("missing tensor " + b + "blocks.1.mlp.linear_fc2.weight"),
              std::string::npos);
    const std::string qkv = error_of(tower("qkv", false, "", "blocks.0.attn.qkv.weight"));
    EXPECT_NE(qkv.find(b + "blocks.0.attn.qkv.weight has shape [193, 64], expected [192, 64]"),
              std::string::npos)
        << qkv;
    // 10 positions are no square grid.
    EXPECT_NE(error_of(tower("grid", false, "", "pos_embed.weight")).find("square grid"),
              std::string::npos);
}

TEST(Qwen3VisionInputs, PatchesPositionsAndRope) {
    Qwen3VisionConfig cfg;
    cfg.width = 64;  // 16 heads of 4: one row pair and one column pair
    cfg.grid_side = 3;
    cfg.patch = 2;
    // A 12 x 8 image: 6 x 4 patches, 3 x 2 merge units; pixel value = its index.
    HostTensor px({12, 8, 3});
    for (size_t i = 0; i < px.data.size(); ++i) px.data[i] = static_cast<float>(i);
    auto in = qwen3_vision_inputs(cfg, px);
    ASSERT_TRUE(in.ok()) << in.status().message();
    EXPECT_EQ(in->grid_w, 6);
    EXPECT_EQ(in->grid_h, 4);
    EXPECT_EQ(in->tokens(), 24);
    EXPECT_EQ(in->outputs(), 6);
    const HostTensor patches = qwen_vision_patches(px, 2, 2, 2);
    EXPECT_EQ(in->patches.ne, patches.ne);
    EXPECT_EQ(in->patches.data, patches.data);

    // Token 5: merge unit 1 (row 0, column 1), its second patch: patch row 0, column 3. The
    // 6 x 4 grid stretched over the 3 x 3 table: row 0 -> 0, column 3 -> 2 * 3 / 5 = 1.2:
    // rows 1 and 2 of the table with weights 0.8 and 0.2 (the bottom pair weighs 0).
    const int t = 5;
    EXPECT_EQ(in->pos_rows[0][t], 1);
    EXPECT_EQ(in->pos_rows[1][t], 2);
    EXPECT_EQ(in->pos_rows[2][t], 4);
    EXPECT_EQ(in->pos_rows[3][t], 5);
    EXPECT_NEAR(in->pos_weights[0].data[t], 0.8f, 1e-6);
    EXPECT_NEAR(in->pos_weights[1].data[t], 0.2f, 1e-6);
    EXPECT_NEAR(in->pos_weights[2].data[t], 0.0f, 1e-6);
    EXPECT_NEAR(in->pos_weights[3].data[t], 0.0f, 1e-6);
    // The last token (patch row 3, column 5) sits on the table's bottom right corner.
    EXPECT_EQ(in->pos_rows[0][23], 8);
    EXPECT_NEAR(in->pos_weights[0].data[23], 1.0f, 1e-6);
    for (int k = 0; k < 24; ++k) {
        float sum = 0;
        for (int j = 0; j < 4; ++j) sum += in->pos_weights[j].data[k];
        EXPECT_NEAR(sum, 1.0f, 1e-6) << k;
    }
    // RoPE: pair 0 turns with the row, pair 1 with the column (theta^0 = 1 radian per step).
    ASSERT_EQ(in->cos.ne, (std::vector<int64_t>{2, 1, 24}));
    EXPECT_NEAR(in->cos.data[t * 2 + 0], 1.0, 1e-6);
    EXPECT_NEAR(in->cos.data[t * 2 + 1], std::cos(3.0), 1e-6);
    EXPECT_NEAR(in->sin.data[23 * 2 + 0], std::sin(3.0), 1e-6);

    EXPECT_FALSE(qwen3_vision_inputs(cfg, HostTensor({10, 8, 3})).ok());
    EXPECT_FALSE(qwen3_vision_inputs(cfg, HostTensor({12, 8, 4})).ok());
}

}  // namespace
}  // namespace ggdiff::models
