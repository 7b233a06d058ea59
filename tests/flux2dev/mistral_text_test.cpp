// FLUX.2 dev's Mistral text path on a tiny random Mistral (30 layers, 64 wide, 2 query heads and
// 1 key/value head of 128) and the synthetic Tekken vocabulary (tests/support): detection from
// Hugging Face names (under a multimodal base, with a vision tower and the embedded tekken.json
// beside it, no final norm) and from llama.cpp GGUF names (q/k rows permuted: interleaved
// RoPE gives the same states), the template's tokens, the conditioner's context
// [3 * 64, max(T, 512)] with zero rows after the tokens, each slice being that layer's output,
// the prompt and its emphasis moving it, and where the tokenizer comes from.
// No real Mistral weights or vocabulary are used: this checks the plumbing, not the numbers
// the real model gives.
#include <gtest/gtest.h>

#include <gguf.h>

#include <algorithm>
#include <cmath>

#include "../io/io_test_util.h"
#include "../support/mistral_synthetic.h"
#include "families/flux2/mistral_text.h"
#include "pipeline/options.h"
#include "pipeline/placement_setup.h"
#include "runtime/module_runner.h"

namespace ggdiff {
namespace {

using testing::FakeTensor;

constexpr int64_t kHidden = 64, kHeads = 2, kKv = 1, kHeadDim = 128, kInter = 96;
constexpr int64_t kVocab = test::kSyntheticSpecials + 256 + 25;
constexpr const char* kLlm = "text_encoders.llm.";

struct TinySpec {
    int64_t layers = 30;
    bool qk_norm = false;
};

// HF names (under "model.") and shapes.
std::vector<std::pair<std::string, std::vector<int64_t>>> tiny_shapes(const TinySpec& s) {
    std::vector<std::pair<std::string, std::vector<int64_t>>> t = {
        {"embed_tokens.weight", {kVocab, kHidden}}};
    for (int64_t i = 0; i < s.layers; ++i) {
        const std::string p = "layers." + std::to_string(i) + ".";
        t.push_back({p + "input_layernorm.weight", {kHidden}});
        t.push_back({p + "self_attn.q_proj.weight", {kHeads * kHeadDim, kHidden}});
        t.push_back({p + "self_attn.k_proj.weight", {kKv * kHeadDim, kHidden}});
        t.push_back({p + "self_attn.v_proj.weight", {kKv * kHeadDim, kHidden}});
        t.push_back({p + "self_attn.o_proj.weight", {kHidden, kHeads * kHeadDim}});
        if (s.qk_norm) {
            t.push_back({p + "self_attn.q_norm.weight", {kHeadDim}});
            t.push_back({p + "self_attn.k_norm.weight", {kHeadDim}});
        }
        t.push_back({p + "post_attention_layernorm.weight", {kHidden}});
        t.push_back({p + "mlp.gate_proj.weight", {kInter, kHidden}});
        t.push_back({p + "mlp.up_proj.weight", {kInter, kHidden}});
        t.push_back({p + "mlp.down_proj.weight", {kHidden, kInter}});
    }
    return t;
}

// Norms near 1, linear weights of unit gain, embeddings in [-1, 1).
std::vector<float> values(const std::string& name, const std::vector<int64_t>& shape,
                          uint32_t seed) {
    std::vector<float> v = testing::pattern(testing::numel(shape), seed);
    const bool norm = shape.size() == 1;
    const bool embed = name.find("embed_tokens") != std::string::npos;
    const double scale = embed ? 1.0 : 1.0 / std::sqrt(static_cast<double>(shape.back()));
    for (float& x : v) x = norm ? 1.0f + 0.1f * x : static_cast<float>(x * scale);
    return v;
}

// Rows of a q/k weight [heads * 128, in] reordered the way llama.cpp's GGUF conversion does:
// row 2i + j of a head holds the HF row j * 64 + i.
std::vector<float> permute_rows(const std::vector<float>& w, int64_t heads, int64_t in) {
    std::vector<float> out(w.size());
    for (int64_t h = 0; h < heads; ++h) {
        for (int64_t i = 0; i < kHeadDim / 2; ++i) {
            for (int64_t j = 0; j < 2; ++j) {
                const int64_t dst = h * kHeadDim + 2 * i + j;
                const int64_t src = h * kHeadDim + j * (kHeadDim / 2) + i;
                std::copy(w.begin() + src * in, w.begin() + (src + 1) * in, out.begin() + dst * in);
            }
        }
    }
    return out;
}

// A Mistral3ForConditionalGeneration-like file: the text model under language_model.model.,
// a vision tower, the tekken.json as "tekken_model" (ComfyUI's way), no final norm.
std::string write_hf(const std::string& dir, const TinySpec& s, const std::string& name) {
    std::vector<FakeTensor> tensors;
    uint32_t seed = 1;
    for (const auto& [n, shape] : tiny_shapes(s)) {
        tensors.push_back({"language_model.model." + n, "F32", shape,
                           testing::to_bytes(values(n, shape, ++seed))});
    }
    tensors.push_back(testing::f32_tensor(
        "vision_tower.transformer.layers.0.attention.q_proj.weight", {16, 16}, 3));
    tensors.push_back(testing::f32_tensor("multi_modal_projector.linear_1.weight", {64, 16}, 4));
    const std::string tekken = test::synthetic_tekken_json();
    tensors.push_back({"tekken_model", "U8", {static_cast<int64_t>(tekken.size())}, tekken});
    const std::string path = dir + "/" + name;
    testing::write_safetensors(path, tensors);
    return path;
}

// The same weights under llama.cpp's GGUF names, q/k rows permuted, with the final norm.
std::string write_gguf(const std::string& dir) {
    const TinySpec s;
    ggml_init_params p{};
    p.mem_size = 1024 * ggml_tensor_overhead();
    p.no_alloc = true;
    ggml_context* ctx = ggml_init(p);
    gguf_context* g = gguf_init_empty();
    gguf_set_val_str(g, "general.architecture", "llama");
    std::vector<std::vector<float>> keep;
    auto add = [&](const std::string& name, const std::vector<int64_t>& shape,
                   std::vector<float> v) {
        ggml_tensor* t = shape.size() == 1
                             ? ggml_new_tensor_1d(ctx, GGML_TYPE_F32, shape[0])
                             : ggml_new_tensor_2d(ctx, GGML_TYPE_F32, shape[1], shape[0]);
        ggml_set_name(t, name.c_str());
        keep.push_back(std::move(v));
        t->data = keep.back().data();
        gguf_add_tensor(g, t);
    };
    keep.reserve(1024);
    uint32_t seed = 1;
    for (const auto& [n, shape] : tiny_shapes(s)) {
        std::vector<float> v = values(n, shape, ++seed);
        std::string gname;
        if (n == "embed_tokens.weight") {
            gname = "token_embd.weight";
        } else {
            const size_t dot = n.find('.', 7);
            const std::string layer = n.substr(7, dot - 7), rest = n.substr(dot + 1);
            static const std::pair<const char*, const char*> kNames[] = {
                {"input_layernorm.weight", "attn_norm.weight"},
                {"self_attn.q_proj.weight", "attn_q.weight"},
                {"self_attn.k_proj.weight", "attn_k.weight"},
                {"self_attn.v_proj.weight", "attn_v.weight"},
                {"self_attn.o_proj.weight", "attn_output.weight"},
                {"post_attention_layernorm.weight", "ffn_norm.weight"},
                {"mlp.gate_proj.weight", "ffn_gate.weight"},
                {"mlp.up_proj.weight", "ffn_up.weight"},
                {"mlp.down_proj.weight", "ffn_down.weight"},
            };
            for (const auto& [hf, ll] : kNames) {
                if (rest == hf) gname = "blk." + layer + "." + ll;
            }
            if (rest == "self_attn.q_proj.weight") v = permute_rows(v, kHeads, kHidden);
            if (rest == "self_attn.k_proj.weight") v = permute_rows(v, kKv, kHidden);
        }
        add(gname, shape, std::move(v));
    }
    add("output_norm.weight", {kHidden}, values("norm", {kHidden}, 999));
    const std::string path = dir + "/mistral.gguf";
    EXPECT_TRUE(gguf_write_to_file(g, path.c_str(), false));
    gguf_free(g);
    ggml_free(ctx);
    return path;
}

class MistralText : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ = testing::test_dir(std::string("flux2dev_") +
                                 ::testing::UnitTest::GetInstance()->current_test_info()->name());
    }

    TensorIndex open(const std::string& path) {
        TensorIndex index;
        Status st = index.add(path, kLlm);
        EXPECT_TRUE(st.ok()) << st.message();
        return index;
    }

    // The conditioner's context for `prompt` (tokenizer from the options / the file).
    HostTensor context(const TensorIndex& index, const std::string& prompt,
                       const std::string& llm_path, const std::string& tokenizer_flag = "") {
        ModelOptions options;
        options.llm = llm_path;
        options.llm_tokenizer = tokenizer_flag;
        EnginePlacement placement;
        FamilyContext ctx{options, index, placement, -1, 2, llm_path, nullptr};
        auto cfg = models::detect_mistral_llm(index, kLlm);
        EXPECT_TRUE(cfg.ok()) << cfg.status().message();
        if (!cfg.ok()) return {};
        auto tok = load_mistral_tokenizer(ctx, kLlm);
        EXPECT_TRUE(tok.ok()) << tok.status().message();
        if (!tok.ok()) return {};
        auto cond = make_flux2_dev_conditioner(ctx, *cfg, *tok);
        EXPECT_TRUE(cond.ok()) << cond.status().message();
        if (!cond.ok()) return {};
        TextRequest r;
        r.prompt = prompt;
        auto c = (*cond)->encode(r);
        EXPECT_TRUE(c.ok()) << c.status().message();
        return c.ok() ? c->context : HostTensor{};
    }

    std::string dir_;
};

double max_abs_diff(const HostTensor& a, const HostTensor& b) {
    double m = a.data.size() == b.data.size() ? 0.0 : 1e30;
    for (size_t i = 0; i < a.data.size() && i < b.data.size(); ++i) {
        m = std::max(m, static_cast<double>(std::fabs(a.data[i] - b.data[i])));
    }
    return m;
}

const MistralTokenizer& tokenizer() {
    static const MistralTokenizer* t = [] {
        auto r = MistralTokenizer::from_tekken_text(test::synthetic_tekken_json(), "synthetic");
        if (!r.ok()) std::abort();
        return new MistralTokenizer(std::move(*r));
    }();
    return *t;
}

TEST_F(MistralText, DetectsMistralFromHfNames) {
    const TensorIndex index = open(write_hf(dir_, {}, "mistral.safetensors"));
    auto cfg = models::detect_mistral_llm(index, kLlm);
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    EXPECT_EQ(cfg->base, "text_encoders.llm.language_model.model.");
    EXPECT_EQ(cfg->vocab, kVocab);
    EXPECT_EQ(cfg->hidden, kHidden);
    EXPECT_EQ(cfg->layers, 30);
    EXPECT_EQ(cfg->heads, kHeads);
    EXPECT_EQ(cfg->kv_heads, kKv);
    EXPECT_EQ(cfg->head_dim, kHeadDim);
    EXPECT_EQ(cfg->intermediate, kInter);
    EXPECT_FALSE(cfg->qkv_bias);
    EXPECT_FALSE(cfg->qk_norm);
    EXPECT_FALSE(cfg->rope_interleaved);
    EXPECT_EQ(cfg->rope_theta, 1e9f);
    EXPECT_EQ(cfg->eps, 1e-5f);
    // Qwen's detection insists on the final norm this file does not have.
    auto qwen = models::detect_qwen_llm(index, kLlm);
    ASSERT_FALSE(qwen.ok());
    EXPECT_NE(qwen.status().message().find("norm.weight"), std::string::npos);
}

TEST_F(MistralText, RefusesAQwenModel) {
    const TensorIndex index = open(write_hf(dir_, {30, true}, "qwen3.safetensors"));
    auto cfg = models::detect_mistral_llm(index, kLlm);
    ASSERT_FALSE(cfg.ok());
    EXPECT_NE(cfg.status().message().find("q/k norms"), std::string::npos)
        << cfg.status().message();
}

TEST(MistralTemplate, TheReferencesTemplate) {
    const ChatTemplate t = flux2_dev_template();
    EXPECT_EQ(t.out_layers, (std::vector<int>{9, 19, 29}));
    EXPECT_EQ(t.drop_tokens, 0);
    EXPECT_EQ(t.pad_tokens, 0);
    const std::vector<int> prefix = tokenizer().encode(t.prefix);
    ASSERT_GT(prefix.size(), 10u);
    EXPECT_EQ(prefix[0], 1);   // <s>, once
    EXPECT_EQ(prefix[1], 17);  // [SYSTEM_PROMPT]
    EXPECT_EQ(std::count(prefix.begin(), prefix.end(), 1), 1);
    EXPECT_EQ(prefix[prefix.size() - 2], 18);  // [/SYSTEM_PROMPT]
    EXPECT_EQ(prefix.back(), 3);               // [INST]
    // The system prompt's text, newline included, between the markers.
    const std::vector<int> text(prefix.begin() + 2, prefix.end() - 2);
    EXPECT_EQ(tokenizer().decode(text),
              "You are an AI that reasons about image descriptions. You give structured responses "
              "focusing on object relationships, object\nattribution and actions without "
              "speculation.");
    EXPECT_EQ(tokenizer().encode(t.suffix), std::vector<int>{4});  // [/INST]
}

// The ids LlmTextEncoder makes for a prompt without emphasis.
std::vector<int> template_ids(const std::string& prompt) {
    const ChatTemplate t = flux2_dev_template();
    std::vector<int> ids = tokenizer().encode(t.prefix);
    for (const std::string& part : {prompt, t.suffix}) {
        const std::vector<int> p = tokenizer().encode(part);
        ids.insert(ids.end(), p.begin(), p.end());
    }
    return ids;
}

TEST_F(MistralText, ContextIsThreeLayersPaddedTo512Rows) {
    const std::string path = write_hf(dir_, {}, "mistral.safetensors");
    const TensorIndex index = open(path);
    const HostTensor a = context(index, "a red apple", path);
    ASSERT_EQ(a.ne, (std::vector<int64_t>{3 * kHidden, 512, 1}));
    const std::vector<int> ids = template_ids("a red apple");
    const int64_t n = static_cast<int64_t>(ids.size());
    ASSERT_LT(n, 512);
    double tail = 0.0, head = 0.0;
    for (int64_t i = 0; i < 3 * kHidden * 512; ++i) {
        (i < 3 * kHidden * n ? head : tail) += std::fabs(a.data[static_cast<size_t>(i)]);
    }
    EXPECT_EQ(tail, 0.0);
    EXPECT_GT(head, 1.0);
    for (float v : a.data) ASSERT_TRUE(std::isfinite(v));

    // Slice k of each row is the output of layer 9, 19 or 29 run on its own.
    auto cfg = models::detect_mistral_llm(index, kLlm);
    ASSERT_TRUE(cfg.ok());
    auto embeds = models::qwen_llm_embed(index, *cfg, ids);
    ASSERT_TRUE(embeds.ok());
    std::vector<int32_t> pos(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) pos[static_cast<size_t>(i)] = static_cast<int32_t>(i);
    for (int k = 0; k < 3; ++k) {
        const int layer = flux2_dev_text_layers()[static_cast<size_t>(k)];
        ModuleDevices where;
        ModuleRunner m(index, -1, where, 2, "LLM");
        auto build = [&](GraphBuilder& gb) {
            return std::vector<ggml_tensor*>{models::build_qwen_llm(
                gb.nn(), *cfg, gb.input(*embeds), gb.input_i32(pos, {n}), {layer})};
        };
        ASSERT_TRUE(m.prepare(build).ok());
        auto out = m.run(build);
        ASSERT_TRUE(out.ok()) << out.status().message();
        double diff = 0.0, other = 0.0;
        for (int64_t t = 0; t < n; ++t) {
            for (int64_t i = 0; i < kHidden; ++i) {
                const float want = (*out)[0].data[static_cast<size_t>(t * kHidden + i)];
                const size_t at = static_cast<size_t>(t * 3 * kHidden + k * kHidden + i);
                diff = std::max(diff, static_cast<double>(std::fabs(a.data[at] - want)));
                const size_t next =
                    static_cast<size_t>(t * 3 * kHidden + ((k + 1) % 3) * kHidden + i);
                other = std::max(other, static_cast<double>(std::fabs(a.data[next] - want)));
            }
        }
        EXPECT_LT(diff, 1e-4) << "layer " << layer;
        EXPECT_GT(other, 1e-2) << "layer " << layer;
    }
}

TEST_F(MistralText, PromptAndEmphasisMoveTheContext) {
    const std::string path = write_hf(dir_, {}, "mistral.safetensors");
    const TensorIndex index = open(path);
    const HostTensor a = context(index, "a red apple", path);
    const HostTensor b = context(index, "a red cat", path);
    const HostTensor c = context(index, "a (red:1.5) apple", path);
    const HostTensor d = context(index, "a (red:0.5) apple", path);  // the same tokens
    const HostTensor again = context(index, "a red apple", path);
    EXPECT_GT(max_abs_diff(a, b), 1e-2);
    EXPECT_GT(max_abs_diff(c, d), 1e-2);
    EXPECT_EQ(max_abs_diff(a, again), 0.0);
    // A prompt longer than 512 tokens keeps every row.
    std::string long_prompt;
    for (int i = 0; i < 200; ++i) long_prompt += "x y ";
    const HostTensor l = context(index, long_prompt, path);
    EXPECT_GT(l.dim(1), 512);
}

TEST_F(MistralText, GgufWithPermutedRowsGivesTheSameStates) {
    const std::string hf_path = write_hf(dir_, {}, "mistral.safetensors");
    const std::string gguf_path = write_gguf(dir_);
    const TensorIndex hf = open(hf_path);
    const TensorIndex gguf = open(gguf_path);
    auto cfg = models::detect_mistral_llm(gguf, kLlm);
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    EXPECT_TRUE(cfg->rope_interleaved);
    EXPECT_EQ(cfg->base, "text_encoders.llm.model.");
    EXPECT_EQ(cfg->layers, 30);
    // The GGUF carries no tokenizer here: the tekken.json beside it is found.
    test::write_text(dir_ + "/tekken.json", test::synthetic_tekken_json());
    const HostTensor a = context(hf, "a red apple", hf_path);
    const HostTensor b = context(gguf, "a red apple", gguf_path);
    ASSERT_EQ(a.ne, b.ne);
    EXPECT_LT(max_abs_diff(a, b), 1e-4);
}

TEST_F(MistralText, TokenizerSources) {
    const std::string path = write_hf(dir_, {}, "mistral.safetensors");
    const TensorIndex index = open(path);
    ModelOptions options;
    options.llm = path;
    EnginePlacement placement;
    FamilyContext ctx{options, index, placement, -1, 1, path, nullptr};
    // The tekken.json inside the --llm file.
    auto tok = load_mistral_tokenizer(ctx, kLlm);
    ASSERT_TRUE(tok.ok()) << tok.status().message();
    EXPECT_EQ((*tok)->encode("Hello"), std::vector<int>{test::synthetic_id("Hello")});
    // After -M convert the bytes are numbers of another type (F32 here).
    {
        const std::string tekken = test::synthetic_tekken_json();
        std::vector<float> as_f32(tekken.size());
        for (size_t i = 0; i < tekken.size(); ++i)
            as_f32[i] = static_cast<float>(static_cast<uint8_t>(tekken[i]));
        const std::string converted = dir_ + "/converted.safetensors";
        testing::write_safetensors(converted, {{"tekken_model",
                                                "F32",
                                                {static_cast<int64_t>(as_f32.size())},
                                                testing::to_bytes(as_f32)}});
        const TensorIndex cindex = open(converted);
        ModelOptions co;
        co.llm = converted;
        FamilyContext cctx{co, cindex, placement, -1, 1, converted, nullptr};
        auto ctok = load_mistral_tokenizer(cctx, kLlm);
        ASSERT_TRUE(ctok.ok()) << ctok.status().message();
        EXPECT_EQ((*ctok)->encode("Hello"), std::vector<int>{test::synthetic_id("Hello")});
    }
    // --llm-tokenizer wins; a bad one is an error naming the flag.
    test::write_text(dir_ + "/hf/tokenizer.json", test::synthetic_tokenizer_json());
    options.llm_tokenizer = dir_ + "/hf";
    tok = load_mistral_tokenizer(ctx, kLlm);
    ASSERT_TRUE(tok.ok()) << tok.status().message();
    options.llm_tokenizer = dir_ + "/missing";
    tok = load_mistral_tokenizer(ctx, kLlm);
    ASSERT_FALSE(tok.ok());
    EXPECT_NE(tok.status().message().find("--llm-tokenizer"), std::string::npos);
    // A GGUF alone: the error says what to pass and where it looked.
    const std::string other = testing::test_dir("flux2dev_gguf_alone");
    const std::string gguf_path = write_gguf(other);
    const TensorIndex gguf = open(gguf_path);
    ModelOptions o2;
    o2.llm = gguf_path;
    FamilyContext ctx2{o2, gguf, placement, -1, 1, gguf_path, nullptr};
    tok = load_mistral_tokenizer(ctx2, kLlm);
    ASSERT_FALSE(tok.ok());
    EXPECT_NE(tok.status().message().find("tekken.json"), std::string::npos);
    EXPECT_NE(tok.status().message().find(other), std::string::npos) << tok.status().message();
}

TEST_F(MistralText, TooFewLayersIsAnError) {
    const std::string path = write_hf(dir_, {29, false}, "short.safetensors");
    const TensorIndex index = open(path);
    ModelOptions options;
    EnginePlacement placement;
    FamilyContext ctx{options, index, placement, -1, 1, path, nullptr};
    auto cfg = models::detect_mistral_llm(index, kLlm);
    ASSERT_TRUE(cfg.ok());
    auto tok = load_mistral_tokenizer(ctx, kLlm);
    ASSERT_TRUE(tok.ok()) << tok.status().message();
    auto cond = make_flux2_dev_conditioner(ctx, *cfg, *tok);
    ASSERT_FALSE(cond.ok());
    EXPECT_NE(cond.status().message().find("29 layers"), std::string::npos)
        << cond.status().message();
}

}  // namespace
}  // namespace ggdiff
