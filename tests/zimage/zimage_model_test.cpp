// The Z-Image DiT's pieces without the pipeline: token padding to multiples of 32, the
// position ids and RoPE angles of text, image and padding tokens, detection of the sizes
// from the weights (and a clear error for a missing pad token), layer-split numbering (the
// refiners stay with the non-block weights), and the graph itself: any latent size comes
// back at that size, the output depends on the caption and the timestep, and a model whose
// keys and values use fewer heads (GQA) equals the same model with those heads repeated.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "../io/io_test_util.h"
#include "families/z_image/dit.h"
#include "placement/block_index.h"
#include "runtime/module_runner.h"

namespace ggdiff::models {
namespace {

using testing::FakeTensor;

// Angle of `token` in RoPE pair `pair` (the first pair of every axis turns at omega 1).
float angle(const ZImageRope& r, int64_t token, int64_t pair) {
    return std::atan2(r.sin[token * r.pairs + pair], r.cos[token * r.pairs + pair]);
}

TEST(ZImageTokens, PaddedToMultiplesOf32) {
    ZImageConfig cfg;
    ZImageTokens t = z_image_tokens(cfg, 8, 8, 17);
    EXPECT_EQ(t.text_padded, 32);
    EXPECT_EQ(t.grid_w, 4);
    EXPECT_EQ(t.grid_h, 4);
    EXPECT_EQ(t.image, 16);
    EXPECT_EQ(t.image_padded, 32);
    t = z_image_tokens(cfg, 128, 128, 32);  // 1024x1024: 4096 patches, no padding
    EXPECT_EQ(t.text_padded, 32);
    EXPECT_EQ(t.image, 4096);
    EXPECT_EQ(t.image_padded, 4096);
    t = z_image_tokens(cfg, 9, 5, 33);  // odd latent sides round up to whole patches
    EXPECT_EQ(t.text_padded, 64);
    EXPECT_EQ(t.grid_w, 5);
    EXPECT_EQ(t.grid_h, 3);
    EXPECT_EQ(t.image_padded, 32);
}

TEST(ZImageTokens, PositionIdsAndAngles) {
    ZImageConfig cfg;
    const ZImageTokens t = z_image_tokens(cfg, 6, 4, 3);  // 3x2 patches
    const std::vector<float> ids = z_image_position_ids(t);
    ASSERT_EQ(ids.size(), static_cast<size_t>(3 * 64));
    for (int64_t i = 0; i < 32; ++i) {  // caption tokens, padding included
        EXPECT_EQ(ids[3 * i], i + 1) << i;
        EXPECT_EQ(ids[3 * i + 1], 0);
        EXPECT_EQ(ids[3 * i + 2], 0);
    }
    // Image patch (y=1, x=2) is token 32 + 1*3 + 2.
    EXPECT_EQ(ids[3 * 37], 33);
    EXPECT_EQ(ids[3 * 37 + 1], 1);
    EXPECT_EQ(ids[3 * 37 + 2], 2);
    for (int64_t i = 38; i < 64; ++i) {  // image padding
        EXPECT_EQ(ids[3 * i] + ids[3 * i + 1] + ids[3 * i + 2], 0) << i;
    }

    const ZImageRope r = z_image_rope(cfg, t);
    EXPECT_EQ(r.pairs, 64);
    EXPECT_EQ(r.tokens, 64);
    EXPECT_NEAR(angle(r, 0, 0), 1.0f, 1e-5);    // caption axis of token 0
    EXPECT_NEAR(angle(r, 37, 16), 1.0f, 1e-5);  // row axis (after 16 caption pairs)
    EXPECT_NEAR(angle(r, 37, 40), 2.0f, 1e-5);  // column axis (after 16 + 24)
    // Pair j of the 32-wide caption axis turns at 256^(-2j/32): token 1 (position 2), pair 4.
    EXPECT_NEAR(std::cos(2.0f * std::pow(256.0f, -8.0f / 32.0f)), r.cos[1 * 64 + 4], 1e-6);
    EXPECT_NEAR(r.cos[40 * 64 + 20], 1.0f, 1e-6);  // padding: angle 0
}

// ---------------------------------------------------------------------------------------------
// A tiny Z-Image in a safetensors file: width 256 (2 heads of 128, as the RoPE needs),
// `kv` key/value heads, FFN 256, caption width 64, one layer and one refiner of each kind.

struct TinySpec {
    int64_t kv = 2;
    bool with_pad_token = true;
};

std::vector<std::pair<std::string, std::vector<int64_t>>> tiny_shapes(const TinySpec& s) {
    const int64_t w = 256, d = 128, h = 2, ffn = 256, cap = 64, c = 16;
    std::vector<std::pair<std::string, std::vector<int64_t>>> t = {
        {"x_embedder.weight", {w, 4 * c}},
        {"x_embedder.bias", {w}},
        {"t_embedder.mlp.0.weight", {w, 256}},
        {"t_embedder.mlp.0.bias", {w}},
        {"t_embedder.mlp.2.weight", {w, w}},
        {"t_embedder.mlp.2.bias", {w}},
        {"cap_embedder.0.weight", {cap}},
        {"cap_embedder.1.weight", {w, cap}},
        {"cap_embedder.1.bias", {w}},
        {"x_pad_token", {1, w}},
        {"final_layer.linear.weight", {4 * c, w}},
        {"final_layer.linear.bias", {4 * c}},
        {"final_layer.adaLN_modulation.1.weight", {w, w}},
        {"final_layer.adaLN_modulation.1.bias", {w}},
    };
    if (s.with_pad_token) t.push_back({"cap_pad_token", {1, w}});
    for (const std::string b : {"noise_refiner.0.", "context_refiner.0.", "layers.0."}) {
        t.push_back({b + "attention.qkv.weight", {(h + 2 * s.kv) * d, w}});
        t.push_back({b + "attention.out.weight", {w, h * d}});
        t.push_back({b + "attention.q_norm.weight", {d}});
        t.push_back({b + "attention.k_norm.weight", {d}});
        t.push_back({b + "feed_forward.w1.weight", {ffn, w}});
        t.push_back({b + "feed_forward.w2.weight", {w, ffn}});
        t.push_back({b + "feed_forward.w3.weight", {ffn, w}});
        for (const char* n : {"attention_norm1", "ffn_norm1", "attention_norm2", "ffn_norm2"}) {
            t.push_back({b + n + ".weight", {w}});
        }
        if (b != "context_refiner.0.") {
            t.push_back({b + "adaLN_modulation.0.weight", {4 * w, w}});
            t.push_back({b + "adaLN_modulation.0.bias", {4 * w}});
        }
    }
    return t;
}

// Values: norms near 1, everything else small and deterministic; a GQA file's key/value
// rows are the first `kv` heads of the full (2-head) draw, so repeating them gives the
// MHA file whose heads are copies.
std::vector<float> values(const std::string& name, const std::vector<int64_t>& shape,
                          uint32_t seed) {
    const int64_t n = testing::numel(shape);
    std::vector<float> v = testing::pattern(n, seed);
    const bool norm = name.find("norm") != std::string::npos && shape.size() == 1;
    const double scale = shape.size() == 2 ? 1.0 / std::sqrt(static_cast<double>(shape[1])) : 0.1;
    for (float& x : v) x = norm ? 1.0f + 0.1f * x : static_cast<float>(x * scale);
    return v;
}

// The qkv rows of the GQA model (kv = 1) and its MHA twin (kv = 2, both key heads equal and
// both value heads equal).
std::vector<float> qkv_values(uint32_t seed, int64_t kv) {
    const int64_t w = 256, d = 128;
    const std::vector<float> full = values("qkv", {4 * d, w}, seed);  // q0 q1 k0 v0 rows
    std::vector<float> out(full.begin(), full.begin() + 2 * d * w);   // q heads
    for (int part = 0; part < 2; ++part) {                            // k, then v
        for (int64_t r = 0; r < kv; ++r) {
            const auto src = full.begin() + (2 + part) * d * w;
            out.insert(out.end(), src, src + d * w);
        }
    }
    return out;
}

std::string write_tiny(const std::string& dir, const TinySpec& s) {
    std::vector<FakeTensor> tensors;
    uint32_t seed = 1;
    for (const auto& [name, shape] : tiny_shapes(s)) {
        ++seed;
        std::vector<float> v = name.find("attention.qkv") != std::string::npos
                                   ? qkv_values(seed, s.kv)
                                   : values(name, shape, seed);
        tensors.push_back({name, "F32", shape, testing::to_bytes(v)});
    }
    const std::string path = dir + "/tiny_kv" + std::to_string(s.kv) +
                             (s.with_pad_token ? "" : "_nopad") + ".safetensors";
    testing::write_safetensors(path, tensors);
    return path;
}

class ZImageGraph : public ::testing::Test {
  protected:
    // One folder per test: ctest runs the tests of this suite in parallel.
    void SetUp() override {
        dir_ = testing::test_dir(std::string("zimage_graph_") +
                                 ::testing::UnitTest::GetInstance()->current_test_info()->name());
    }

    TensorIndex open(const std::string& path) {
        TensorIndex index;
        Status st = index.add(path, "model.diffusion_model.");
        EXPECT_TRUE(st.ok()) << st.message();
        return index;
    }

    // The DiT on latent [w, h, 16, 1] (a ramp), caption [64, L, 1], sampler timestep t.
    HostTensor run(const TensorIndex& index, const ZImageConfig& cfg, int64_t w, int64_t h,
                   int64_t text, float t, float caption_shift = 0.0f) {
        ModuleDevices where;
        ModuleRunner m(index, -1, where, 2, "DiT");
        HostTensor x({w, h, 16, 1});
        for (size_t i = 0; i < x.data.size(); ++i) x.data[i] = std::sin(0.37f * i);
        HostTensor ts({1});
        ts.data[0] = 1000.0f - t;
        HostTensor ctx({64, text, 1});
        for (size_t i = 0; i < ctx.data.size(); ++i)
            ctx.data[i] = std::cos(0.11f * i) + caption_shift;
        const ZImageRope r = z_image_rope(cfg, z_image_tokens(cfg, w, h, text));
        HostTensor cos({1, r.pairs, 1, r.tokens}), sin({1, r.pairs, 1, r.tokens});
        cos.data = r.cos;
        sin.data = r.sin;
        auto build = [&](GraphBuilder& gb) {
            return std::vector<ggml_tensor*>{build_z_image(gb.nn(), cfg, gb.input(x), gb.input(ts),
                                                           gb.input(ctx), gb.input(cos),
                                                           gb.input(sin))};
        };
        Status st = m.prepare(build);
        EXPECT_TRUE(st.ok()) << st.message();
        if (!st.ok()) return {};
        auto out = m.run(build);
        EXPECT_TRUE(out.ok()) << out.status().message();
        return out.ok() ? (*out)[0] : HostTensor{};
    }

    std::string dir_;
};

double max_abs_diff(const HostTensor& a, const HostTensor& b) {
    double m = 0.0;
    for (size_t i = 0; i < a.data.size() && i < b.data.size(); ++i) {
        m = std::max(m, static_cast<double>(std::fabs(a.data[i] - b.data[i])));
    }
    return m;
}

TEST_F(ZImageGraph, DetectsSizesFromTheWeights) {
    const TensorIndex index = open(write_tiny(dir_, {1, true}));
    auto cfg = detect_z_image(index);
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    EXPECT_TRUE(is_z_image(index));
    EXPECT_EQ(cfg->width, 256);
    EXPECT_EQ(cfg->head_dim, 128);
    EXPECT_EQ(cfg->heads, 2);
    EXPECT_EQ(cfg->kv_heads, 1);
    EXPECT_EQ(cfg->ffn, 256);
    EXPECT_EQ(cfg->cap_width, 64);
    EXPECT_EQ(cfg->t_width, 256);
    EXPECT_EQ(cfg->adaln_width, 256);
    EXPECT_EQ(cfg->latent_channels, 16);
    EXPECT_EQ(cfg->layers, 1);
    EXPECT_EQ(cfg->noise_refiners, 1);
    EXPECT_EQ(cfg->context_refiners, 1);

    const TensorIndex nopad = open(write_tiny(dir_, {2, false}));
    auto bad = detect_z_image(nopad);
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find("model.diffusion_model.cap_pad_token"), std::string::npos)
        << bad.status().message();
}

// Layer split moves whole main layers; the refiners (noise_refiner.N, context_refiner.N) are
// not block segments, so they stay on the main device with the embedders.
TEST(ZImagePlacement, MainLayersAreTheBlocks) {
    std::vector<std::string> names;
    for (const auto& [name, shape] : tiny_shapes({2, true})) {
        names.push_back("model.diffusion_model." + name);
    }
    names.push_back("model.diffusion_model.layers.1.attention.qkv.weight");
    const placement::BlockNumbering n = placement::number_blocks(names);
    ASSERT_EQ(n.num_blocks(), 2);
    EXPECT_EQ(n.block_names[0], "layers.0");
    EXPECT_EQ(n.block_names[1], "layers.1");
    for (size_t i = 0; i < names.size(); ++i) {
        const bool main_layer = names[i].find(".layers.") != std::string::npos;
        EXPECT_EQ(n.block[i] >= 0, main_layer) << names[i];
    }
}

TEST_F(ZImageGraph, AnyLatentSizeAndInputsMatter) {
    const TensorIndex index = open(write_tiny(dir_, {2, true}));
    auto cfg = detect_z_image(index);
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    const HostTensor a = run(index, *cfg, 9, 5, 7, 600.0f);
    ASSERT_EQ(a.numel(), 9 * 5 * 16);
    EXPECT_EQ(a.dim(0), 9);
    EXPECT_EQ(a.dim(1), 5);
    EXPECT_EQ(a.dim(2), 16);
    for (float v : a.data) ASSERT_TRUE(std::isfinite(v));
    const HostTensor other_time = run(index, *cfg, 9, 5, 7, 200.0f);
    const HostTensor other_caption = run(index, *cfg, 9, 5, 7, 600.0f, 0.5f);
    EXPECT_GT(max_abs_diff(a, other_time), 1e-3);
    EXPECT_GT(max_abs_diff(a, other_caption), 1e-3);
}

TEST_F(ZImageGraph, GroupedKeyValueHeadsEqualRepeatedHeads) {
    const TensorIndex gqa_index = open(write_tiny(dir_, {1, true}));
    const TensorIndex mha_index = open(write_tiny(dir_, {2, true}));
    auto gqa = detect_z_image(gqa_index);
    auto mha = detect_z_image(mha_index);
    ASSERT_TRUE(gqa.ok() && mha.ok());
    ASSERT_EQ(gqa->kv_heads, 1);
    ASSERT_EQ(mha->kv_heads, 2);
    const HostTensor a = run(gqa_index, *gqa, 8, 6, 5, 500.0f);
    const HostTensor b = run(mha_index, *mha, 8, 6, 5, 500.0f);
    ASSERT_EQ(a.ne, b.ne);
    EXPECT_LT(max_abs_diff(a, b), 1e-4);
    double mag = 0.0;
    for (float v : a.data) mag = std::max(mag, static_cast<double>(std::fabs(v)));
    EXPECT_GT(mag, 1e-2);
}

}  // namespace
}  // namespace ggdiff::models
