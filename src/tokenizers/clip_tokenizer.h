// CLIP's byte-level BPE tokenizer (openai/CLIP simple_tokenizer.py, as used by SD1/SD2/SDXL).
//
// Text is whitespace-collapsed, trimmed and lowercased, split with CLIP's pre-tokenizer
//   <|startoftext|>|<|endoftext|>|'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+
// (letters of any script, single digits, runs of other non-space characters), each piece is
// mapped byte by byte through GPT-2's bytes_to_unicode table, "</w>" marks the word end, and
// pieces are merged by merge rank. The vocabulary is rebuilt from the merge list exactly as CLIP
// does: the 256 byte characters, the same with "</w>", one entry per merge, then
// <|startoftext|> (49406) and <|endoftext|> (49407).
//
// Not done (nor by stable-diffusion.cpp): ftfy fixes, HTML unescaping, NFC normalization.
#pragma once

#include <array>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/status.h"

namespace ggdiff {

// Words cut out of the normalized text wherever they occur, even inside a word, each standing
// for fixed token ids (textual-inversion embeddings: the word is the embedding's name, the
// ids are its rows appended after the vocabulary). At one position the first word of the list
// that starts there wins.
struct ClipSpecialWords {
    std::vector<std::string> words;     // lower case, not empty
    std::vector<std::vector<int>> ids;  // what each word stands for
};

class ClipTokenizer {
  public:
    // CLIP uses the first 49152 - 256 - 2 = 48894 merges of its list.
    static constexpr int kNumMerges = 48894;
    static constexpr int kVocabSize = 49408;

    // A merges.txt file: a version header line ("#version: 0.2"), then one "a b" merge per line.
    static Result<ClipTokenizer> from_merges_file(const std::string& path);
    // The same contents already in memory (e.g. embedded in checkpoint metadata).
    static Result<ClipTokenizer> from_merges_text(const std::string& merges_text);
    // A Hugging Face vocab.json (token -> id) plus its merges.txt.
    static Result<ClipTokenizer> from_vocab_and_merges(const std::string& vocab_json_path,
                                                       const std::string& merges_path);
    // A Hugging Face tokenizer.json (model.vocab and model.merges).
    static Result<ClipTokenizer> from_tokenizer_json(const std::string& path);
    // Any of the above by what the path is: a folder holding merges.txt (and vocab.json) or
    // tokenizer.json, a *.json file (tokenizer.json, or vocab.json next to merges.txt), or a
    // merges file. This is what find_clip_merges() returns.
    static Result<ClipTokenizer> from_path(const std::string& path);

    // Token ids of `text`, without BOS/EOS; with `special`, its words become their ids.
    std::vector<int> encode(const std::string& text,
                            const ClipSpecialWords* special = nullptr) const;
    // Text of `ids`: word ends become spaces, BOS/EOS are skipped, the result is trimmed.
    std::string decode(const std::vector<int>& ids) const;

    int bos() const { return bos_; }
    int eos() const { return eos_; }
    int vocab_size() const { return static_cast<int>(decoder_.size()); }
    // -1 when `token` (in byte-level form, e.g. "horse</w>") is not in the vocabulary.
    int token_to_id(const std::string& token) const;
    // "" for ids outside the vocabulary.
    const std::string& id_to_token(int id) const;

    // The CLIP pre-tokenizer on already cleaned text (exposed for tests).
    static std::vector<std::string> pre_tokenize(const std::string& text);
    // Whitespace collapse + trim + lowercase, as applied before pre-tokenizing.
    static std::string normalize(const std::string& text);
    // Normalized text cut at the earliest occurrence of any of `words`, repeatedly: pieces of
    // plain text (word -1) and the words found (their index in `words`), in order.
    struct Piece {
        std::string text;
        int word = -1;
    };
    static std::vector<Piece> split_special(const std::string& normalized,
                                            const std::vector<std::string>& words);

  private:
    using MergeList = std::vector<std::pair<std::string, std::string>>;
    static Result<MergeList> parse_merges(const std::string& text, bool expect_header);
    static Result<ClipTokenizer> build(MergeList merges,
                                       const std::unordered_map<std::string, int>* vocab);

    std::vector<std::string> bpe(const std::string& piece) const;

    std::array<std::string, 256> byte_encoder_;  // byte -> UTF-8 of its stand-in character
    std::unordered_map<char32_t, unsigned char> byte_decoder_;
    std::unordered_map<std::string, int> encoder_;
    std::vector<std::string> decoder_;
    std::unordered_map<std::string, int> ranks_;  // "first second" -> rank
    int bos_ = 49406;
    int eos_ = 49407;
};

}  // namespace ggdiff
