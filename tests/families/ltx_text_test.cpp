// LTX-2's text path without the pipeline: Gemma 3 read from Hugging Face names and from
// llama.cpp GGUF names (renamed on load, norms holding the +1: the same states), its sizes and
// RoPE / window settings, the errors that name the missing tensor, every hidden state and the
// aggregate projections against an independent float64 numpy forward
// (tests/tools/ltx_text_reference.py), and LTX-2.0's min-max normalization.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>

#include "../io/io_test_util.h"
#include "families/ltx/text.h"
#include "io/name_map.h"
#include "runtime/module_runner.h"

namespace ggdiff::models {
namespace {

using testing::FakeTensor;

const std::string kLlm = "text_encoders.llm.";
// A tiny Gemma 3: 7 layers (layer 5 global, the others local), 2 query heads sharing one
// key/value head of 256 (the size detect_gemma3 assumes), 32 wide, MLP 24, 50 tokens; LTX-2.3
// projections to 24 (video) and 16 (audio) from 8 states of 32.
constexpr int64_t kHidden = 32, kHead = 256, kHeads = 2, kKv = 1, kMlp = 24, kVocab = 50,
                  kLayers = 7, kVideo = 24, kAudio = 16;

using Shapes = std::vector<std::pair<std::string, std::vector<int64_t>>>;

Shapes hf_shapes() {
    Shapes t = {{"model.embed_tokens.weight", {kVocab, kHidden}}, {"model.norm.weight", {kHidden}}};
    for (int i = 0; i < kLayers; ++i) {
        const std::string p = "model.layers." + std::to_string(i) + ".";
        for (const char* n : {"input_layernorm", "post_attention_layernorm",
                              "pre_feedforward_layernorm", "post_feedforward_layernorm"}) {
            t.push_back({p + n + ".weight", {kHidden}});
        }
        t.push_back({p + "self_attn.q_proj.weight", {kHeads * kHead, kHidden}});
        t.push_back({p + "self_attn.k_proj.weight", {kKv * kHead, kHidden}});
        t.push_back({p + "self_attn.v_proj.weight", {kKv * kHead, kHidden}});
        t.push_back({p + "self_attn.o_proj.weight", {kHidden, kHeads * kHead}});
        t.push_back({p + "self_attn.q_norm.weight", {kHead}});
        t.push_back({p + "self_attn.k_norm.weight", {kHead}});
        t.push_back({p + "mlp.gate_proj.weight", {kMlp, kHidden}});
        t.push_back({p + "mlp.up_proj.weight", {kMlp, kHidden}});
        t.push_back({p + "mlp.down_proj.weight", {kHidden, kMlp}});
    }
    return t;
}

// llama.cpp's name for a Hugging Face Gemma name (written out here, independently of io/).
std::string llama_name(const std::string& hf) {
    if (hf == "model.embed_tokens.weight") return "token_embd.weight";
    if (hf == "model.norm.weight") return "output_norm.weight";
    const std::map<std::string, std::string> layer = {
        {"input_layernorm.weight", "attn_norm.weight"},
        {"post_attention_layernorm.weight", "post_attention_norm.weight"},
        {"pre_feedforward_layernorm.weight", "ffn_norm.weight"},
        {"post_feedforward_layernorm.weight", "post_ffw_norm.weight"},
        {"self_attn.q_proj.weight", "attn_q.weight"},
        {"self_attn.k_proj.weight", "attn_k.weight"},
        {"self_attn.v_proj.weight", "attn_v.weight"},
        {"self_attn.o_proj.weight", "attn_output.weight"},
        {"self_attn.q_norm.weight", "attn_q_norm.weight"},
        {"self_attn.k_norm.weight", "attn_k_norm.weight"},
        {"mlp.gate_proj.weight", "ffn_gate.weight"},
        {"mlp.up_proj.weight", "ffn_up.weight"},
        {"mlp.down_proj.weight", "ffn_down.weight"},
    };
    const size_t a = std::string("model.layers.").size(), b = hf.find('.', a);
    return "blk." + hf.substr(a, b - a) + "." + layer.at(hf.substr(b + 1));
}

// Norm weights small around 0 (used as 1 + w), matrices scaled by 1/sqrt(fan-in); by name.
std::vector<float> values(const std::string& name, const std::vector<int64_t>& shape) {
    uint32_t seed = 11;
    for (char ch : name) seed = seed * 31u + static_cast<uint8_t>(ch);
    std::vector<float> v = testing::pattern(testing::numel(shape), seed);
    const bool vec = shape.size() == 1;
    const double scale = name.find("embed_tokens") != std::string::npos ? 1.0
                         : vec                                          ? 0.2
                               : 1.5 / std::sqrt(static_cast<double>(shape[1]));
    for (float& x : v) x = static_cast<float>(x * scale);
    return v;
}

// The Gemma 3 file: HF names, or llama.cpp names with 1 added to the norm weights.
std::string write_llm(const std::string& dir, bool llama, const std::string& drop = "") {
    std::vector<FakeTensor> tensors;
    for (const auto& [name, shape] : hf_shapes()) {
        if (name == drop) continue;
        std::vector<float> v = values(name, shape);
        const bool norm = name.find("norm.weight") != std::string::npos;
        if (llama && norm) {
            for (float& x : v) x += 1.0f;
        }
        tensors.push_back({llama ? llama_name(name) : name, "F32", shape, testing::to_bytes(v)});
    }
    const std::string path = dir + (llama ? "/gemma3_llama.safetensors" : "/gemma3_hf.safetensors");
    testing::write_safetensors(path, tensors);
    return path;
}

std::string write_projection(const std::string& dir, int64_t in = kHidden * (kLayers + 1)) {
    std::vector<FakeTensor> tensors;
    const std::string p = "text_embedding_projection.";
    for (const auto& [name, out] :
         {std::pair<std::string, int64_t>{"video_aggregate_embed", kVideo},
          {"audio_aggregate_embed", kAudio}}) {
        tensors.push_back({p + name + ".weight",
                           "F32",
                           {out, in},
                           testing::to_bytes(values(p + name + ".weight", {out, in}))});
        tensors.push_back({p + name + ".bias",
                           "F32",
                           {out},
                           testing::to_bytes(values(p + name + ".bias", {out}))});
    }
    const std::string path = dir + "/connectors.safetensors";
    testing::write_safetensors(path, tensors);
    return path;
}

const std::vector<int> kIds = {2, 17, 5, 43, 8, 31};

double max_diff(const HostTensor& a, const HostTensor& b) {
    double m = a.data.size() == b.data.size() ? 0.0 : 1e30;
    for (size_t i = 0; i < a.data.size() && i < b.data.size(); ++i)
        m = std::max(m, static_cast<double>(std::fabs(a.data[i] - b.data[i])));
    return m;
}

struct TextRun {
    std::vector<HostTensor> states;
    HostTensor context;
};

TextRun run_text(const TensorIndex& index, const LtxTextConfig& cfg) {
    TextRun r;
    auto embeds = gemma_embed(index, cfg.llm, kIds);
    EXPECT_TRUE(embeds.ok()) << embeds.status().message();
    if (!embeds.ok()) return r;
    const int64_t t = static_cast<int64_t>(kIds.size());
    std::vector<int32_t> pos;
    for (int64_t i = 0; i < t; ++i) pos.push_back(static_cast<int32_t>(i));
    ModuleDevices where;
    {
        ModuleRunner m(index, -1, where, 2, "Gemma 3");
        auto build = [&](GraphBuilder& gb) {
            std::vector<ggml_tensor*> states;
            build_gemma(gb.nn(), cfg.llm, gb.input(*embeds), gb.input_i32(pos, {t}), 0, {},
                        &states);
            return states;
        };
        Status st = m.prepare(build);
        EXPECT_TRUE(st.ok()) << st.message();
        auto out = m.run(build);
        EXPECT_TRUE(out.ok()) << out.status().message();
        if (!out.ok()) return r;
        r.states = std::move(*out);
    }
    EXPECT_EQ(static_cast<int64_t>(r.states.size()), cfg.states);
    HostTensor features = ltx_text_features(cfg, r.states);
    features.ne = {cfg.features(), t, 1};
    ModuleRunner m(index, -1, where, 2, "LTX text projection");
    auto build = [&](GraphBuilder& gb) {
        return std::vector<ggml_tensor*>{
            build_ltx_text_projection(gb.nn(), cfg, gb.input(features))};
    };
    Status st = m.prepare(build);
    EXPECT_TRUE(st.ok()) << st.message();
    auto out = m.run(build);
    EXPECT_TRUE(out.ok()) << out.status().message();
    if (out.ok()) r.context = (*out)[0];
    return r;
}

// The Hugging Face-named Gemma and the projection of `index` in one file, as the numpy
// forward reads them.
std::string reference_weights(const std::string& dir, const TensorIndex& index) {
    std::vector<FakeTensor> all;
    for (const TensorInfo& t : index.tensors()) {
        std::vector<float> v;
        EXPECT_TRUE(index.read_f32(t, v).ok()) << t.name;
        std::string name = t.name;
        if (name.rfind(kLlm, 0) == 0) name = name.substr(kLlm.size());
        all.push_back({name, "F32", t.shape, testing::to_bytes(v)});
    }
    const std::string path = dir + "/reference.safetensors";
    testing::write_safetensors(path, all);
    return path;
}

// Runs tests/tools/ltx_text_reference.py on `weights` (HF names and the projection in one
// file) for kIds: the states [S, T, hidden] then the context [T, video + audio].
std::vector<float> numpy_reference(const std::string& dir, const std::string& weights,
                                   int window = 1024) {
    const std::string json = dir + "/config.json";
    {
        std::ofstream f(json);
        f << "{\"ids\": [";
        for (size_t i = 0; i < kIds.size(); ++i) f << (i ? ", " : "") << kIds[i];
        f << "], \"head_dim\": " << kHead << ", \"heads\": " << kHeads << ", \"kv_heads\": " << kKv
          << ", \"window\": " << window << "}";
    }
    const std::string out_path = dir + "/reference.f32";
    const std::string cmd = "/usr/bin/python3 " GGDIFF_SOURCE_DIR
                            "/tests/tools/ltx_text_reference.py " +
                            weights + " " + json + " " + out_path;
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    const int64_t t = static_cast<int64_t>(kIds.size()), s = kLayers + 1;
    std::vector<float> ref(static_cast<size_t>(s * t * kHidden + t * (kVideo + kAudio)));
    std::ifstream f(out_path, std::ios::binary);
    f.read(reinterpret_cast<char*>(ref.data()), static_cast<std::streamsize>(ref.size() * 4));
    EXPECT_TRUE(f.good()) << out_path;
    return ref;
}

class LtxText : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ = testing::test_dir(std::string("ltx_text_") +
                                 ::testing::UnitTest::GetInstance()->current_test_info()->name());
    }
    TensorIndex open(bool llama, const std::string& drop = "") {
        TensorIndex index;
        Status st = index.add(write_llm(dir_, llama, drop), kLlm);
        EXPECT_TRUE(st.ok()) << st.message();
        st = index.add(write_projection(dir_), "");
        EXPECT_TRUE(st.ok()) << st.message();
        return index;
    }
    std::string dir_;
};

TEST(LtxTextNames, GemmaGgufNormsAreRenamedByRole) {
    const std::vector<std::string> names = {"token_embd.weight",
                                            "blk.0.attn_norm.weight",
                                            "blk.0.post_attention_norm.weight",
                                            "blk.0.ffn_norm.weight",
                                            "blk.0.post_ffw_norm.weight",
                                            "blk.0.attn_q_norm.weight",
                                            "blk.0.attn_output.weight",
                                            "output_norm.weight"};
    const std::vector<std::string> want = {"model.embed_tokens.weight",
                                           "model.layers.0.input_layernorm.weight",
                                           "model.layers.0.post_attention_layernorm.weight",
                                           "model.layers.0.pre_feedforward_layernorm.weight",
                                           "model.layers.0.post_feedforward_layernorm.weight",
                                           "model.layers.0.self_attn.q_norm.weight",
                                           "model.layers.0.self_attn.o_proj.weight",
                                           "model.norm.weight"};
    const std::vector<NameMapping> m = map_tensor_names(names, kLlm, nullptr);
    ASSERT_EQ(m.size(), names.size());
    for (const NameMapping& x : m) EXPECT_EQ(x.name, kLlm + want[x.source]) << names[x.source];
    // A Qwen GGUF (no post_ffw_norm) keeps ffn_norm as the norm before its MLP.
    const std::vector<NameMapping> q =
        map_tensor_names({"token_embd.weight", "blk.0.ffn_norm.weight"}, kLlm, nullptr);
    ASSERT_EQ(q.size(), 2u);
    EXPECT_EQ(q[1].name, kLlm + "model.layers.0.post_attention_layernorm.weight");
}

TEST_F(LtxText, DetectsGemma3AndTheProjection) {
    for (bool llama : {false, true}) {
        const TensorIndex index = open(llama);
        auto cfg = detect_ltx_text(index, kLlm);
        ASSERT_TRUE(cfg.ok()) << cfg.status().message();
        EXPECT_EQ(cfg->llm.hidden, kHidden);
        EXPECT_EQ(cfg->llm.layers, kLayers);
        EXPECT_EQ(cfg->llm.heads, kHeads);
        EXPECT_EQ(cfg->llm.kv_heads, kKv);
        EXPECT_EQ(cfg->llm.intermediate, kMlp);
        EXPECT_EQ(cfg->llm.vocab, kVocab);
        EXPECT_TRUE(cfg->llm.qk_norm);
        EXPECT_EQ(cfg->llm.norm_adds_one, !llama);
        EXPECT_EQ(cfg->llm.rope_theta, 1e6f);
        EXPECT_EQ(cfg->llm.rope_scale, 8.0f);
        EXPECT_EQ(cfg->llm.rope_theta_local, 1e4f);
        EXPECT_EQ(cfg->llm.sliding_window, 1024);
        EXPECT_TRUE(cfg->llm.sliding(0));
        EXPECT_TRUE(cfg->llm.sliding(4));
        EXPECT_FALSE(cfg->llm.sliding(5));
        EXPECT_TRUE(cfg->llm.sliding(6));
        EXPECT_FALSE(cfg->llm.needs_masks(1024));
        EXPECT_TRUE(cfg->llm.needs_masks(1025));
        EXPECT_TRUE(cfg->dual);
        EXPECT_EQ(cfg->states, kLayers + 1);
        EXPECT_EQ(cfg->video_width, kVideo);
        EXPECT_EQ(cfg->audio_width, kAudio);
        EXPECT_EQ(cfg->out_width(), kVideo + kAudio);
    }
}

TEST_F(LtxText, ErrorsNameTheTensor) {
    {
        const TensorIndex index = open(false, "model.layers.0.self_attn.k_norm.weight");
        auto cfg = detect_ltx_text(index, kLlm);
        ASSERT_FALSE(cfg.ok());
        EXPECT_NE(cfg.status().message().find(kLlm + "model.layers.0.self_attn.k_norm.weight"),
                  std::string::npos)
            << cfg.status().message();
    }
    {
        TensorIndex index;
        ASSERT_TRUE(index.add(write_llm(dir_, false), kLlm).ok());
        auto cfg = detect_ltx_text(index, kLlm);
        ASSERT_FALSE(cfg.ok());
        EXPECT_NE(cfg.status().message().find("--embeddings-connectors"), std::string::npos)
            << cfg.status().message();
    }
    {
        TensorIndex index;  // a projection for another depth
        ASSERT_TRUE(index.add(write_llm(dir_, false), kLlm).ok());
        ASSERT_TRUE(index.add(write_projection(dir_, kHidden * 49), "").ok());
        auto cfg = detect_ltx_text(index, kLlm);
        ASSERT_FALSE(cfg.ok());
        EXPECT_NE(cfg.status().message().find("video_aggregate_embed.weight takes 1568"),
                  std::string::npos)
            << cfg.status().message();
    }
}

// Every state and the projected context against tests/tools/ltx_text_reference.py; the
// llama.cpp-named file (norms + 1) gives the same numbers.
TEST_F(LtxText, MatchesTheNumpyForward) {
    const std::vector<float> ref = numpy_reference(dir_, reference_weights(dir_, open(false)));
    const int64_t t = static_cast<int64_t>(kIds.size()), s = kLayers + 1;
    for (bool llama : {false, true}) {
        const TensorIndex index = open(llama);
        auto cfg = detect_ltx_text(index, kLlm);
        ASSERT_TRUE(cfg.ok()) << cfg.status().message();
        const TextRun r = run_text(index, *cfg);
        ASSERT_EQ(static_cast<int64_t>(r.states.size()), s);
        double worst = 0.0, scale = 0.0;
        for (int64_t k = 0; k < s; ++k) {
            for (int64_t i = 0; i < t * kHidden; ++i) {
                const float want = ref[static_cast<size_t>(k * t * kHidden + i)];
                worst = std::max(worst, std::fabs(static_cast<double>(
                                            r.states[static_cast<size_t>(k)].data[i] - want)));
                scale = std::max(scale, std::fabs(static_cast<double>(want)));
            }
        }
        EXPECT_LT(worst, 2e-3 * scale) << "states, llama names " << llama << ", largest " << scale;
        ASSERT_EQ(r.context.data.size(), static_cast<size_t>(t * (kVideo + kAudio)));
        double cworst = 0.0;
        for (size_t i = 0; i < r.context.data.size(); ++i) {
            cworst = std::max(cworst, std::fabs(static_cast<double>(r.context.data[i] -
                                                                    ref[s * t * kHidden + i])));
        }
        EXPECT_LT(cworst, 2e-3) << "context, llama names " << llama;
        // One value spelled out: token 0's first video feature.
        EXPECT_NEAR(r.context.data[0], ref[s * t * kHidden], 2e-3);
        // The text path as the recipe runs it gives the same context; A1111 emphasis on the
        // raw states is cancelled by LTX-2.3's per-token RMS normalization (as in the
        // reference).
        ModuleDevices where;
        ModuleRunner llm(index, -1, where, 2, "Gemma 3"), proj(index, -1, where, 2, "proj");
        ASSERT_TRUE(ltx_prepare_text(llm, proj, *cfg).ok());
        // It numbers the tokens 1024 - t .. 1023 as the reference does (it pads the prompt on
        // the left to 1024 tokens): the same attention, but RoPE rounds differently there than
        // at 0 .. t-1, so it agrees with run_text and the numpy forward to their tolerance.
        auto ctx = ltx_encode_tokens(llm, proj, index, *cfg, kIds, {});
        ASSERT_TRUE(ctx.ok()) << ctx.status().message();
        EXPECT_LT(max_diff(*ctx, r.context), 2e-3);
        EXPECT_GT(max_diff(*ctx, r.context), 0.0) << "the tokens' positions start at 1024 - t";
        std::vector<float> w(kIds.size(), 1.0f);
        w[2] = 1.5f;
        auto weighted = ltx_encode_tokens(llm, proj, index, *cfg, kIds, w);
        ASSERT_TRUE(weighted.ok());
        EXPECT_LT(max_diff(*weighted, r.context), 1e-3);
        std::printf(
            "llama names %d: states within %.2e (largest %.3f), context within %.2e "
            "(context[0] %.6f vs numpy %.6f)\n",
            llama, worst, scale, cworst, r.context.data[0], ref[s * t * kHidden]);
    }
}

// A prompt longer than the sliding window (here shrunk to 3 tokens) runs the local layers with
// the window mask, as the numpy forward does.
TEST_F(LtxText, SlidingWindowBeyondItsLength) {
    const TensorIndex index = open(false);
    const std::vector<float> ref = numpy_reference(dir_, reference_weights(dir_, index), 3);
    const int64_t t = static_cast<int64_t>(kIds.size()), s = kLayers + 1;
    auto cfg = detect_ltx_text(index, kLlm);
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    cfg->llm.sliding_window = 3;
    ASSERT_TRUE(cfg->llm.needs_masks(t));
    ModuleDevices where;
    ModuleRunner llm(index, -1, where, 2, "Gemma 3"), proj(index, -1, where, 2, "proj");
    ASSERT_TRUE(ltx_prepare_text(llm, proj, *cfg).ok());
    auto ctx = ltx_encode_tokens(llm, proj, index, *cfg, kIds, {});
    ASSERT_TRUE(ctx.ok()) << ctx.status().message();
    double worst = 0.0;
    for (size_t i = 0; i < ctx->data.size(); ++i) {
        worst = std::max(worst,
                         std::fabs(static_cast<double>(ctx->data[i] - ref[s * t * kHidden + i])));
    }
    std::printf("window 3: context within %.2e of numpy\n", worst);
    EXPECT_LT(worst, 2e-3);
    // Without the window the context differs: the mask did something.
    cfg->llm.sliding_window = 1024;
    auto full = ltx_encode_tokens(llm, proj, index, *cfg, kIds, {});
    ASSERT_TRUE(full.ok());
    EXPECT_GT(max_diff(*full, *ctx), 1e-2);
}

// LTX-2.0's single projection normalizes each state by its mean and range over all tokens.
TEST(LtxTextFeatures, MinMaxNormalizationOfTheSingleProjection) {
    LtxTextConfig cfg;
    cfg.dual = false;
    cfg.llm.hidden = 2;
    cfg.states = 2;
    HostTensor a({2, 2}), b({2, 2});
    a.data = {0.0f, 1.0f, 2.0f, 3.0f};  // mean 1.5, range 3
    b.data = {-1.0f, -1.0f, 1.0f, 1.0f};
    const HostTensor f = ltx_text_features(cfg, {a, b});
    ASSERT_EQ(f.data.size(), 8u);
    const float sa = 8.0f / (3.0f + 1e-6f), sb = 8.0f / (2.0f + 1e-6f);
    // token 0: h0 s0, h0 s1, h1 s0, h1 s1
    EXPECT_FLOAT_EQ(f.data[0], (0.0f - 1.5f) * sa);
    EXPECT_FLOAT_EQ(f.data[1], -1.0f * sb);
    EXPECT_FLOAT_EQ(f.data[2], (1.0f - 1.5f) * sa);
    EXPECT_FLOAT_EQ(f.data[3], -1.0f * sb);
    EXPECT_FLOAT_EQ(f.data[6], (3.0f - 1.5f) * sa);
    cfg.dual = true;  // LTX-2.3: each token's state over its RMS
    const HostTensor g = ltx_text_features(cfg, {a, b});
    EXPECT_NEAR(g.data[4], 2.0f / std::sqrt(6.5f + 1e-6f), 1e-6);
    EXPECT_NEAR(g.data[5], 1.0f / std::sqrt(1.0f + 1e-6f), 1e-6);
}

}  // namespace
}  // namespace ggdiff::models
