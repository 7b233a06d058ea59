// llama.cpp's GGUF names for a Qwen-family language model (the GGUF files users download for
// Qwen3-4B, e.g. "Qwen3-4B-Q8_0.gguf") -> the HF causal-LM names the text encoders read.
// llama.cpp stores Qwen2/Qwen3 q/k weights unpermuted (their RoPE is the NeoX kind), so a
// rename is all it takes.
#include "io/name_map.h"
#include "io/name_util.h"

namespace ggdiff {

bool is_llama_gguf_layout(const std::vector<std::string>& names) {
    bool embd = false, blk = false;
    for (const std::string& n : names) {
        embd |= n == "token_embd.weight";
        blk |= starts_with(n, "blk.");
    }
    return embd && blk;
}

bool llama_gguf_to_hf(const std::string& name, std::string* out) {
    static const std::pair<const char*, const char*> kTop[] = {
        {"token_embd.weight", "model.embed_tokens.weight"},
        {"output_norm.weight", "model.norm.weight"},
        {"output.weight", "lm_head.weight"},
    };
    for (const auto& [from, to] : kTop) {
        if (name == from) {
            *out = to;
            return true;
        }
    }
    static const std::pair<const char*, const char*> kLayer[] = {
        {"attn_norm.", "input_layernorm."},    {"attn_q_norm.", "self_attn.q_norm."},
        {"attn_k_norm.", "self_attn.k_norm."}, {"attn_q.", "self_attn.q_proj."},
        {"attn_k.", "self_attn.k_proj."},      {"attn_v.", "self_attn.v_proj."},
        {"attn_output.", "self_attn.o_proj."}, {"ffn_norm.", "post_attention_layernorm."},
        {"ffn_gate.", "mlp.gate_proj."},       {"ffn_up.", "mlp.up_proj."},
        {"ffn_down.", "mlp.down_proj."},
    };
    int layer = 0;
    std::string rest;
    if (!take_indexed(name, "blk.", &layer, &rest)) return false;
    for (const auto& [from, to] : kLayer) {
        std::string r = rest;
        if (replace_prefix(&r, from, to)) {
            *out = "model.layers." + std::to_string(layer) + "." + r;
            return true;
        }
    }
    return false;
}

}  // namespace ggdiff
