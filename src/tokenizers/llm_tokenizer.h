// What a language-model text encoder needs from its tokenizer (Qwen2's byte-level BPE,
// Mistral's Tekken): the ids of a text with its special tokens recognised, and the id of one
// token by name.
#pragma once

#include <string>
#include <vector>

namespace ggdiff {

class LlmTokenizer {
  public:
    virtual ~LlmTokenizer() = default;
    // Token ids of `text`, special tokens written in it recognised; no BOS/EOS added.
    virtual std::vector<int> encode(const std::string& text) const = 0;
    // -1 when unknown.
    virtual int token_to_id(const std::string& token) const = 0;
};

}  // namespace ggdiff
