// llama.cpp's GGUF names for a Qwen-family language model (the GGUF files users download for
// Qwen3-4B, e.g. "Qwen3-4B-Q8_0.gguf") -> the HF causal-LM names the text encoders read.
// llama.cpp stores Qwen2/Qwen3 q/k weights unpermuted (their RoPE is the NeoX kind), so a
// rename is all it takes. GPT-OSS's extra tensors (sinks, router, experts) are renamed too.
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
        {"attn_norm.", "input_layernorm."},
        {"attn_q_norm.", "self_attn.q_norm."},
        {"attn_k_norm.", "self_attn.k_norm."},
        {"attn_q.", "self_attn.q_proj."},
        {"attn_k.", "self_attn.k_proj."},
        {"attn_v.", "self_attn.v_proj."},
        {"attn_output.", "self_attn.o_proj."},
        {"ffn_norm.", "post_attention_layernorm."},
        {"ffn_gate.", "mlp.gate_proj."},
        {"ffn_up.", "mlp.up_proj."},
        {"ffn_down.", "mlp.down_proj."},
        // GPT-OSS (llama.cpp's openai-moe): attention sinks, the norm before the MoE, its
        // router and experts (kept in llama.cpp's split [in, out, experts] layout).
        {"attn_sinks.weight", "self_attn.sinks"},
        {"post_attention_norm.", "post_attention_layernorm."},
        {"ffn_gate_inp.", "mlp.router."},
        {"ffn_gate_exps.", "mlp.experts.gate_proj."},
        {"ffn_up_exps.", "mlp.experts.up_proj."},
        {"ffn_down_exps.", "mlp.experts.down_proj."},
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

bool is_llama_gemma_gguf_layout(const std::vector<std::string>& names) {
    if (!is_llama_gguf_layout(names)) return false;
    for (const std::string& n : names) {
        if (starts_with(n, "blk.") && ends_with(n, ".post_ffw_norm.weight")) return true;
    }
    return false;
}

bool llama_gemma_gguf_to_hf(const std::string& name, std::string* out) {
    // Gemma's four norms per layer: llama.cpp's ffn_norm is the norm before the MLP here (a
    // Qwen's post_attention_layernorm), post_attention_norm the one after attention.
    static const std::pair<const char*, const char*> kNorms[] = {
        {"ffn_norm.", "pre_feedforward_layernorm."},
        {"post_attention_norm.", "post_attention_layernorm."},
        {"post_ffw_norm.", "post_feedforward_layernorm."},
    };
    int layer = 0;
    std::string rest;
    if (take_indexed(name, "blk.", &layer, &rest)) {
        for (const auto& [from, to] : kNorms) {
            std::string r = rest;
            if (replace_prefix(&r, from, to)) {
                *out = "model.layers." + std::to_string(layer) + "." + r;
                return true;
            }
        }
    }
    return llama_gguf_to_hf(name, out);
}

bool is_mmproj_layout(const std::vector<std::string>& names) {
    for (const std::string& n : names) {
        if (starts_with(n, "v.blk.")) return true;
    }
    return false;
}

bool mmproj_to_hf(const std::string& name, std::string* out) {
    static const std::pair<const char*, const char*> kTop[] = {
        {"v.patch_embd.weight", "patch_embed.proj.0.weight"},
        {"v.patch_embd.weight.1", "patch_embed.proj.1.weight"},
        {"v.post_ln.weight", "merger.ln_q.weight"},
    };
    for (const auto& [from, to] : kTop) {
        if (name == from) {
            *out = to;
            return true;
        }
    }
    std::string r = name;
    if (replace_prefix(&r, "mm.", "merger.mlp.")) {
        *out = r;
        return true;
    }
    static const std::pair<const char*, const char*> kBlock[] = {
        {"attn_q.", "attn.q_proj."},
        {"attn_k.", "attn.k_proj."},
        {"attn_v.", "attn.v_proj."},
        {"attn_out.", "attn.proj."},
        {"ffn_gate.", "mlp.gate_proj."},
        {"ffn_up.", "mlp.up_proj."},
        {"ffn_down.", "mlp.down_proj."},
        {"ln1.", "norm1."},
        {"ln2.", "norm2."},
    };
    int block = 0;
    std::string rest;
    if (!take_indexed(name, "v.blk.", &block, &rest)) return false;
    for (const auto& [from, to] : kBlock) {
        std::string b = rest;
        if (replace_prefix(&b, from, to)) {
            *out = "blocks." + std::to_string(block) + "." + b;
            return true;
        }
    }
    return false;
}

}  // namespace ggdiff
