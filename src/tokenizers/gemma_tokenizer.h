// Gemma's tokenizer (Gemma 2; a SentencePiece BPE model with byte fallback, 256k tokens, too
// big to build in), read from its Hugging Face tokenizer.json (model.vocab, model.merges,
// added_tokens), and run as stable-diffusion.cpp (38a51f81, Gemma2Tokenizer) runs it:
//   1. the text is cut at Gemma's special tokens (<bos>, <start_of_turn>, "\n" runs, html
//      tags, <0xNN>, ...: the reference's list, earliest match first, ties to the earlier
//      entry), each special becoming its id;
//   2. the runs between them are split by the GPT-2 / Qwen2 pre-tokenizer pattern (letters
//      with one leading non-letter, single digits, punctuation runs, whitespace);
//   3. in each piece spaces become U+2581 and its characters merge by the merge list's ranks;
//      a result that is not in the vocabulary becomes its bytes' <0xNN> tokens (byte
//      fallback; <unk> where even those are missing).
// No BOS is added by encode(); bos_id() / pad_id() give <bos> and <pad>.
//
// Gemma 3 (LTX-2's text encoder; the reference's GemmaTokenizer) runs the same way with its own
// special-token list (GemmaVersion::kGemma3: adds <mask>, [multimodal], more html tags,
// <start_of_image>, <end_of_image>, <unused99..6241>, <image_soft_token>; no <2mass>, [@BOS@],
// [toxicity=0]); gemma3_prompt_tokens() tokenizes a prompt as the reference's LTX conditioner
// does (A1111 emphasis, <bos> first).
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

// Which Gemma's special tokens the text is cut at (the vocabularies differ in them).
enum class GemmaVersion { kGemma2, kGemma3 };

// Where Gemma's tokenizer.json is: `flag` (--llm-tokenizer: the file, or a folder holding it or
// a tokenizer/ folder that does), else beside each of `model_paths` (the --llm file, the main
// model): its folder, that folder's tokenizer/, and the tokenizer/ folder beside it. Otherwise
// the error says what to pass (`version`'s tokenizer.json) and where it looked.
Result<std::string> find_gemma_tokenizer(const std::vector<std::string>& model_paths,
                                         const std::string& flag,
                                         GemmaVersion version = GemmaVersion::kGemma2);

class GemmaTokenizer : public LlmTokenizer {
  public:
    // A tokenizer.json file, or a folder holding one.
    static Result<GemmaTokenizer> from_path(const std::string& path,
                                            GemmaVersion version = GemmaVersion::kGemma2);
    // A SentencePiece vocabulary as a llama.cpp GGUF of Gemma lists it (models/te/gemma_vocab.h
    // reads it): token i with score i and type i (unused rows, type 5, are left out; no types:
    // all used). The merges are made from the scores as Hugging Face's converter makes Gemma's
    // tokenizer.json: every split of a token into two tokens, ranked by the whole token's score
    // (highest first; ties in vocabulary order, then by the halves' ids). `what` names the
    // source in errors.
    static Result<GemmaTokenizer> from_sentencepiece(const std::vector<std::string>& tokens,
                                                     const std::vector<float>& scores,
                                                     const std::vector<int64_t>& types,
                                                     const std::string& what,
                                                     GemmaVersion version = GemmaVersion::kGemma2);

    std::vector<int> encode(const std::string& text) const override;
    int token_to_id(const std::string& token) const override;

    int bos_id() const { return bos_; }
    int pad_id() const { return pad_; }
    size_t vocab_size() const { return id_to_token_.size(); }

    GemmaVersion version() const { return version_; }

    // The special tokens stable-diffusion.cpp cuts Gemma 2 (Gemma2Tokenizer) or Gemma 3
    // (GemmaTokenizer) text at, in its order.
    static const std::vector<std::string>& special_tokens(
        GemmaVersion version = GemmaVersion::kGemma2);

  private:
    std::vector<int> encode_piece(const std::string& piece) const;
    // bos / pad / unk and the specials from the vocabulary; `what` names the source in errors.
    Status finish(const std::string& what);

    std::unordered_map<std::string, int> vocab_;
    std::unordered_map<int, std::string> id_to_token_;
    std::unordered_map<std::string, int> merges_;        // "first second" -> rank
    std::vector<std::pair<std::string, int>> specials_;  // the reference's order
    std::array<bool, 256> special_start_{};              // bytes a special starts with
    int bos_ = 2, pad_ = 0, unk_ = 3;
    GemmaVersion version_ = GemmaVersion::kGemma2;
};

// A prompt's tokens as stable-diffusion.cpp's LTX-2 conditioner (LTXAVEmbedder::tokenize) makes
// them: the A1111 emphasis runs of the prompt as typed (no template, no leading space), each
// tokenized, <bos> first with weight 1. As there, a BREAK is no chunk break: it is tokenized as
// the word "BREAK" with its marker weight -1. No padding (the reference's left padding to 1024
// tokens is the caller's; Gemma's padding id is pad_id()).
struct GemmaPromptTokens {
    std::vector<int> ids;
    std::vector<float> weights;  // one per id
};
GemmaPromptTokens gemma3_prompt_tokens(const GemmaTokenizer& tok, const std::string& prompt);

}  // namespace ggdiff
