// The Qwen-family LLM text encoder's graph options on a tiny Qwen3 (2 layers, 64 wide, 2 query
// heads of 32 sharing 1 key/value head): several layers' outputs come back concatenated on the
// feature axis, each equal to that layer read alone; with padding hidden as keys, the real tokens'
// states are those of the unpadded prompt (causal attention and hidden padding keys: nothing after
// a token reaches it).
#include <gtest/gtest.h>

#include <cmath>

#include "../io/io_test_util.h"
#include "models/te/qwen_llm.h"
#include "runtime/module_runner.h"

namespace ggdiff::models {
namespace {

using testing::FakeTensor;

constexpr int64_t kHidden = 64, kHead = 32, kFfn = 96, kVocab = 32;
constexpr int kLayers = 2;
constexpr const char* kBase = "text_encoders.llm.model.";

std::string write_tiny_qwen3(const std::string& dir) {
    std::vector<std::pair<std::string, std::vector<int64_t>>> shapes = {
        {"embed_tokens.weight", {kVocab, kHidden}}, {"norm.weight", {kHidden}}};
    for (int i = 0; i < kLayers; ++i) {
        const std::string p = "layers." + std::to_string(i) + ".";
        shapes.push_back({p + "input_layernorm.weight", {kHidden}});
        shapes.push_back({p + "post_attention_layernorm.weight", {kHidden}});
        shapes.push_back({p + "self_attn.q_proj.weight", {2 * kHead, kHidden}});
        shapes.push_back({p + "self_attn.k_proj.weight", {kHead, kHidden}});
        shapes.push_back({p + "self_attn.v_proj.weight", {kHead, kHidden}});
        shapes.push_back({p + "self_attn.o_proj.weight", {kHidden, 2 * kHead}});
        shapes.push_back({p + "self_attn.q_norm.weight", {kHead}});
        shapes.push_back({p + "self_attn.k_norm.weight", {kHead}});
        shapes.push_back({p + "mlp.gate_proj.weight", {kFfn, kHidden}});
        shapes.push_back({p + "mlp.up_proj.weight", {kFfn, kHidden}});
        shapes.push_back({p + "mlp.down_proj.weight", {kHidden, kFfn}});
    }
    std::vector<FakeTensor> tensors;
    uint32_t seed = 3;
    for (const auto& [name, shape] : shapes) {
        std::vector<float> v = testing::pattern(testing::numel(shape), ++seed);
        const bool norm = shape.size() == 1;
        for (float& x : v) x = norm ? 1.0f + 0.1f * x : x / std::sqrt(float(shape.back()));
        tensors.push_back({kBase + name, "F32", shape, testing::to_bytes(v)});
    }
    const std::string path = dir + "/tiny_qwen3.safetensors";
    testing::write_safetensors(path, tensors);
    return path;
}

class QwenLlm : public ::testing::Test {
  protected:
    void SetUp() override {
        const std::string dir =
            testing::test_dir(std::string("qwen_llm_") +
                              ::testing::UnitTest::GetInstance()->current_test_info()->name());
        Status st = index_.add(write_tiny_qwen3(dir), "");
        ASSERT_TRUE(st.ok()) << st.message();
        auto cfg = detect_qwen_llm(index_, "text_encoders.llm.");
        ASSERT_TRUE(cfg.ok()) << cfg.status().message();
        cfg_ = *cfg;
    }

    // Hidden states of `ids` with `out_layers`, `padding` trailing tokens hidden as keys.
    HostTensor run(const std::vector<int>& ids, const std::vector<int>& out_layers,
                   int64_t padding = 0) {
        auto embeds = qwen_llm_embed(index_, cfg_, ids);
        EXPECT_TRUE(embeds.ok()) << embeds.status().message();
        if (!embeds.ok()) return {};
        const int64_t n = static_cast<int64_t>(ids.size());
        std::vector<int32_t> pos(ids.size());
        for (size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<int32_t>(i);
        ModuleDevices where;
        ModuleRunner m(index_, -1, where, 2, "LLM");
        auto build = [&](GraphBuilder& gb) {
            return std::vector<ggml_tensor*>{build_qwen_llm(
                gb.nn(), cfg_, gb.input(*embeds), gb.input_i32(pos, {n}), out_layers, padding)};
        };
        Status st = m.prepare(build);
        EXPECT_TRUE(st.ok()) << st.message();
        auto out = m.run(build);
        EXPECT_TRUE(out.ok()) << out.status().message();
        return out.ok() ? (*out)[0] : HostTensor{};
    }

    TensorIndex index_;
    QwenLlmConfig cfg_;
};

TEST_F(QwenLlm, SeveralLayersConcatenateOnFeatures) {
    ASSERT_EQ(cfg_.heads, 2);
    ASSERT_EQ(cfg_.kv_heads, 1);
    const std::vector<int> ids = {3, 7, 1, 9, 4};
    const HostTensor both = run(ids, {0, 1});
    const HostTensor first = run(ids, {0});
    const HostTensor second = run(ids, {1});
    const HostTensor normed = run(ids, {});
    ASSERT_EQ(both.dim(0), 2 * kHidden);
    ASSERT_EQ(both.dim(1), 5);
    ASSERT_EQ(first.dim(0), kHidden);
    ASSERT_EQ(first.dim(1), 5);
    double diff = 0.0, layers_apart = 0.0, norm_apart = 0.0;
    for (int64_t t = 0; t < 5; ++t) {
        for (int64_t i = 0; i < kHidden; ++i) {
            const float a = both.data[t * 2 * kHidden + i],
                        b = both.data[t * 2 * kHidden + kHidden + i];
            diff = std::max(diff, double(std::fabs(a - first.data[t * kHidden + i])));
            diff = std::max(diff, double(std::fabs(b - second.data[t * kHidden + i])));
            layers_apart = std::max(layers_apart, double(std::fabs(a - b)));
            norm_apart = std::max(norm_apart, double(std::fabs(b - normed.data[t * kHidden + i])));
        }
    }
    EXPECT_LT(diff, 1e-5);
    EXPECT_GT(layers_apart, 1e-3);  // the two layers differ
    EXPECT_GT(norm_apart, 1e-3);    // a layer's output is not the final normed state
}

TEST_F(QwenLlm, MaskedPaddingLeavesTheRealTokensAlone) {
    const std::vector<int> ids = {3, 7, 1, 9};
    std::vector<int> padded = ids;
    padded.resize(256, 31);
    const HostTensor plain = run(ids, {0, 1});
    const HostTensor masked = run(padded, {0, 1}, 252);
    ASSERT_EQ(masked.dim(0), 2 * kHidden);
    ASSERT_EQ(masked.dim(1), 256);
    double diff = 0.0;
    for (size_t i = 0; i < plain.data.size(); ++i) {
        diff = std::max(diff, double(std::fabs(plain.data[i] - masked.data[i])));
    }
    EXPECT_LT(diff, 1e-5);
    // The padding rows are computed (they see the real tokens), not zero; no padding token
    // sees another: changing one changes its own row only.
    double pad_mag = 0.0;
    for (size_t i = plain.data.size(); i < masked.data.size(); ++i) {
        pad_mag = std::max(pad_mag, double(std::fabs(masked.data[i])));
    }
    EXPECT_GT(pad_mag, 1e-3);
    std::vector<int> other = padded;
    other[10] = 30;
    const HostTensor changed = run(other, {0, 1}, 252);
    const int64_t row = 2 * kHidden;
    double own = 0.0, rest = 0.0;
    for (int64_t t = 0; t < 256; ++t) {
        for (int64_t i = 0; i < row; ++i) {
            const double d = std::fabs(changed.data[t * row + i] - masked.data[t * row + i]);
            (t == 10 ? own : rest) = std::max(t == 10 ? own : rest, d);
        }
    }
    EXPECT_GT(own, 1e-3);
    EXPECT_LT(rest, 1e-5);
}

}  // namespace
}  // namespace ggdiff::models
