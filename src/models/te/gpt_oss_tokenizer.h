// GPT-OSS's tokenizer from the vocabulary a llama.cpp GGUF carries, for users who have only
// the .gguf (unsloth/gpt-oss-20b-GGUF): tokenizer.ggml.model "gpt2" (byte-level BPE) with
// tokenizer.ggml.tokens, tokenizer.ggml.merges and tokenizer.ggml.token_type (control and
// user-defined tokens are the specials: <|start|>, <|message|>, ...). The text is split with
// Qwen2's pre-tokenizer pattern whatever tokenizer.ggml.pre names ("gpt-4o" for GPT-OSS), as
// stable-diffusion.cpp (38a51f81) splits it.
#pragma once

#include <string>

#include "core/status.h"
#include "tokenizers/qwen2_tokenizer.h"

namespace ggdiff::models {

struct GgufVocab {
    Qwen2Tokenizer tokenizer;
    std::string pre;  // tokenizer.ggml.pre ("" when absent)
    size_t tokens = 0, merges = 0;
};

// The tokenizer stored in GGUF file `path`. The error says what the file lacks (not a GGUF, no
// tokenizer.ggml.tokens, a model other than "gpt2", ...).
Result<GgufVocab> read_gguf_vocab(const std::string& path);

}  // namespace ggdiff::models
