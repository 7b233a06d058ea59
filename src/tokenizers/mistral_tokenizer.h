// Mistral's "Tekken" tokenizer (Mistral Small 3.1 / 3.2, Nemo, Ministral): byte-level BPE over
// tiktoken-style ranks, with its own pre-tokenizer
//   [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|
//   [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}|
//   ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
// and control tokens (<s>, [INST], [/INST], [SYSTEM_PROMPT], ...) that are cut out of the text
// first and map straight to their ids, as Hugging Face's tokenizer.json and the reference
// engine match them.
//
// Files: Mistral's own tekken.json (config.pattern, vocab [{rank, token_bytes (base64)}],
// special_tokens [{rank, token_str}]: special tokens take ids 0..num_special-1, vocabulary
// rank r takes id num_special + r, the vocabulary cut to config.default_vocab_size), or the
// Hugging Face tokenizer.json converted from it (model.vocab / model.merges in GPT-2's
// byte-level characters, added_tokens). Both give the same ids: a piece that is itself a
// token is that token (tiktoken looks pieces up whole; tokenizer.json's "ignore_merges"),
// else its bytes merge by rank; every byte is a token, so no text is out of vocabulary.
// No BOS is added by encode(): the reference puts one <s> (bos_id()) before the whole prompt.
#pragma once

#include <array>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/status.h"
#include "tokenizers/llm_tokenizer.h"

namespace ggdiff {

class MistralTokenizer : public LlmTokenizer {
  public:
    // A tekken.json or tokenizer.json file, or a folder holding one (tekken.json first).
    static Result<MistralTokenizer> from_path(const std::string& path);
    static Result<MistralTokenizer> from_tekken_file(const std::string& path);
    static Result<MistralTokenizer> from_tokenizer_json(const std::string& path);
    // tekken.json's text (e.g. the "tekken_model" bytes ComfyUI's single-file text encoders
    // carry); `origin` names it in errors.
    static Result<MistralTokenizer> from_tekken_text(const std::string& text,
                                                     const std::string& origin);

    std::vector<int> encode(const std::string& text) const override;
    std::string decode(const std::vector<int>& ids) const;
    int token_to_id(const std::string& token) const override;

    int bos_id() const { return bos_; }
    bool is_special(int id) const;
    size_t vocab_size() const { return vocab_.size() + specials_.size(); }
    size_t special_count() const { return specials_.size(); }

    // The pre-tokenizer on plain text (no special tokens), exposed for tests.
    static std::vector<std::string> pre_tokenize(const std::string& text);
    // The pattern above, as tekken.json and tokenizer.json spell it.
    static const char* pattern();

  private:
    static Result<MistralTokenizer> from_tekken(const nlohmann::json& j, const std::string& origin);
    static Result<MistralTokenizer> from_hf(const nlohmann::json& j, const std::string& origin);
    Status add_special(const std::string& content, int id);
    Status finish(const std::string& origin);
    std::vector<int> encode_plain(const std::string& text) const;
    int merge_rank(const std::string& first, const std::string& second) const;

    // Tokens in GPT-2's byte-level characters (tokenizer.json's spelling; tekken's bytes are
    // converted on load).
    std::unordered_map<std::string, int> vocab_;
    std::unordered_map<int, std::string> id_to_token_;
    // tokenizer.json: "first second" -> merge rank. tekken.json: empty; a pair merges at the
    // rank of the token it makes (tiktoken).
    std::unordered_map<std::string, int> merges_;
    std::unordered_map<std::string, int> token_rank_;  // tekken: token -> rank
    bool tiktoken_ranks_ = false;
    bool whole_piece_lookup_ = false;
    std::vector<std::pair<std::string, int>> specials_;  // longest first
    std::unordered_map<int, std::string> special_by_id_;
    std::array<bool, 256> special_first_byte_{};
    std::array<std::string, 256> byte_symbol_;
    std::unordered_map<std::string, unsigned char> symbol_byte_;
    int bos_ = -1;
};

}  // namespace ggdiff
