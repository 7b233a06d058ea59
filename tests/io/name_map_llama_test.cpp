// llama.cpp GGUF names of a Qwen-family language model given as --llm become the HF names
// the text encoders read; other files keep their names.
#include <gtest/gtest.h>

#include "io/name_map.h"
#include "io/tensor_index.h"
#include "io_test_util.h"

namespace ggdiff {
namespace {

using namespace ggdiff::testing;

TEST(NameMapLlama, RenamesEveryQwen3Tensor) {
    const std::pair<const char*, const char*> cases[] = {
        {"token_embd.weight", "model.embed_tokens.weight"},
        {"output_norm.weight", "model.norm.weight"},
        {"output.weight", "lm_head.weight"},
        {"blk.0.attn_norm.weight", "model.layers.0.input_layernorm.weight"},
        {"blk.3.attn_q.weight", "model.layers.3.self_attn.q_proj.weight"},
        {"blk.3.attn_q.bias", "model.layers.3.self_attn.q_proj.bias"},
        {"blk.3.attn_k.weight", "model.layers.3.self_attn.k_proj.weight"},
        {"blk.3.attn_v.weight", "model.layers.3.self_attn.v_proj.weight"},
        {"blk.12.attn_output.weight", "model.layers.12.self_attn.o_proj.weight"},
        {"blk.35.attn_q_norm.weight", "model.layers.35.self_attn.q_norm.weight"},
        {"blk.35.attn_k_norm.weight", "model.layers.35.self_attn.k_norm.weight"},
        {"blk.1.ffn_norm.weight", "model.layers.1.post_attention_layernorm.weight"},
        {"blk.1.ffn_gate.weight", "model.layers.1.mlp.gate_proj.weight"},
        {"blk.1.ffn_up.weight", "model.layers.1.mlp.up_proj.weight"},
        {"blk.1.ffn_down.weight", "model.layers.1.mlp.down_proj.weight"},
    };
    for (const auto& [from, to] : cases) {
        std::string out;
        EXPECT_TRUE(llama_gguf_to_hf(from, &out)) << from;
        EXPECT_EQ(out, to) << from;
    }
    std::string out;
    EXPECT_FALSE(llama_gguf_to_hf("blk.x.attn_q.weight", &out));
    EXPECT_FALSE(llama_gguf_to_hf("model.layers.0.self_attn.q_proj.weight", &out));
}

TEST(NameMapLlama, AppliesToLanguageModelFilesOnly) {
    const std::vector<std::string> names = {"token_embd.weight", "blk.0.attn_q.weight",
                                            "blk.0.attn_q_norm.weight", "output_norm.weight"};
    std::vector<std::string> notes;
    const std::vector<NameMapping> m = map_tensor_names(names, "text_encoders.llm.", &notes);
    ASSERT_EQ(m.size(), names.size());
    EXPECT_EQ(m[0].name, "text_encoders.llm.model.embed_tokens.weight");
    EXPECT_EQ(m[1].name, "text_encoders.llm.model.layers.0.self_attn.q_proj.weight");
    EXPECT_EQ(m[2].name, "text_encoders.llm.model.layers.0.self_attn.q_norm.weight");
    EXPECT_EQ(m[3].name, "text_encoders.llm.model.norm.weight");
    ASSERT_FALSE(notes.empty());

    // The same names as a diffusion model are left alone.
    const std::vector<NameMapping> d = map_tensor_names(names, "model.diffusion_model.");
    EXPECT_EQ(d[0].name, "model.diffusion_model.token_embd.weight");
}

TEST(NameMapLlama, IndexedFileReadsUnderHfNames) {
    const std::string dir = test_dir("name_map_llama");
    write_safetensors(
        dir + "/qwen3.safetensors",
        {f16_tensor("token_embd.weight", {16, 8}), f32_tensor("output_norm.weight", {8}),
         f16_tensor("blk.0.attn_q.weight", {16, 8}), f32_tensor("blk.0.attn_q_norm.weight", {4})});
    TensorIndex index;
    ASSERT_TRUE(index.add(dir + "/qwen3.safetensors", prefix_for_role("llm")).ok());
    const TensorInfo* q = index.find("text_encoders.llm.model.layers.0.self_attn.q_proj.weight");
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(q->shape, (std::vector<int64_t>{16, 8}));
    EXPECT_TRUE(index.has("text_encoders.llm.model.embed_tokens.weight"));
    EXPECT_FALSE(index.has("text_encoders.llm.token_embd.weight"));
}

}  // namespace
}  // namespace ggdiff
