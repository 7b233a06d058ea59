// The Qwen2 byte-level BPE tokenizer (Qwen2 / Qwen2.5-VL / Qwen3 text models).
//
// Added (special) tokens such as <|im_start|> are cut out of the text first and map straight
// to their ids; the rest is split by Qwen2's pre-tokenizer
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|
//   \s*[\r\n]+|\s+(?!\S)|\s+
// each piece's bytes go through GPT-2's bytes_to_unicode table and are merged by merge rank.
// No BOS/EOS is added (the chat template carries its own markers).
//
// Files: vocab.json + merges.txt with the added tokens from added_tokens.json (either
// {"<|im_start|>": 151644, ...} or {"added_tokens": [{"id", "content"}, ...]}) or
// tokenizer_config.json's added_tokens_decoder; or one tokenizer.json.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/status.h"
#include "tokenizers/llm_tokenizer.h"

namespace ggdiff {

class Qwen2Tokenizer : public LlmTokenizer {
  public:
    // A folder holding vocab.json + merges.txt (+ added tokens) or tokenizer.json, or a
    // tokenizer.json / vocab.json file.
    static Result<Qwen2Tokenizer> from_path(const std::string& path);
    static Result<Qwen2Tokenizer> from_vocab_and_merges(const std::string& vocab_json_path,
                                                        const std::string& merges_path);
    static Result<Qwen2Tokenizer> from_tokenizer_json(const std::string& path);
    // The vocabulary as a llama.cpp GGUF holds it (tokenizer.ggml.tokens / merges /
    // token_type): token i has id i; type 3 (control) and 4 (user-defined) are special tokens,
    // type 5 (unused padding) is skipped. `origin` names the source in errors.
    static Result<Qwen2Tokenizer> from_token_list(const std::vector<std::string>& tokens,
                                                  const std::vector<std::string>& merges,
                                                  const std::vector<int64_t>& token_types,
                                                  const std::string& origin);

    // Token ids of `text` (special tokens recognised), no BOS/EOS.
    std::vector<int> encode(const std::string& text) const override;
    std::string decode(const std::vector<int>& ids) const;

    // -1 when unknown (a vocabulary token in byte-level form, or an added token).
    int token_to_id(const std::string& token) const override;
    size_t vocab_size() const { return encoder_.size() + added_.size(); }
    size_t added_count() const { return added_.size(); }

    // The pre-tokenizer on plain text (no special tokens), exposed for tests.
    static std::vector<std::string> pre_tokenize(const std::string& text);

  private:
    Status add_special(const std::string& content, int id);
    Status finish();
    std::vector<int> encode_plain(const std::string& text) const;
    std::vector<std::string> bpe(const std::string& piece) const;

    std::array<std::string, 256> byte_encoder_;
    std::unordered_map<std::string, unsigned char> byte_decoder_;  // UTF-8 of stand-in -> byte
    std::unordered_map<std::string, int> encoder_;
    std::unordered_map<int, std::string> decoder_;
    std::unordered_map<std::string, int> ranks_;      // "first second" -> rank
    std::vector<std::pair<std::string, int>> added_;  // longest first
};

}  // namespace ggdiff
