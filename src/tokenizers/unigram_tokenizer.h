// SentencePiece Unigram tokenizer (T5, UMT5) read from a Hugging Face tokenizer.json.
//
// Encoding: the text is split on whitespace; each word gets the Metaspace replacement
// ("▁") in front (prepend_scheme "always"; "first"/"never" as the file says) and is cut
// into the pieces of highest total log-probability (Viterbi over the vocabulary's
// scores). A character no piece covers becomes the unknown token (score: lowest piece
// score - 10), runs of them one unknown token, as SentencePiece does. The normalizer's
// precompiled NFKC map is not applied (stable-diffusion.cpp does not either): prompts are
// taken as written.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "core/status.h"

namespace ggdiff {

class UnigramTokenizer {
  public:
    // `source` names the file in errors.
    static Result<UnigramTokenizer> from_json_text(const std::string& json,
                                                   const std::string& source);
    static Result<UnigramTokenizer> from_file(const std::string& path);

    // Token ids of `text`, without the end-of-sequence token.
    std::vector<int> encode(const std::string& text) const;

    int eos_id() const { return eos_id_; }
    int pad_id() const { return pad_id_; }
    int unk_id() const { return unk_id_; }
    size_t vocab_size() const { return pieces_.size(); }
    const std::string& piece(int id) const { return pieces_[static_cast<size_t>(id)]; }

  private:
    void encode_word(const std::string& word, std::vector<int>& out) const;

    std::vector<std::string> pieces_;
    std::vector<float> scores_;
    std::unordered_map<std::string, int> ids_;
    size_t max_piece_bytes_ = 0;
    float unk_score_ = -10.0f;
    int unk_id_ = 2, eos_id_ = 1, pad_id_ = 0;
    std::string replacement_ = "\xe2\x96\x81";  // U+2581
    enum class Prepend { Always, First, Never } prepend_ = Prepend::Always;
};

// T5's input layout (as stable-diffusion.cpp lays it out for FLUX and SD3): the weighted
// tokens are cut into chunks of chunk_len - 1, each followed by EOS; the last chunk is
// padded to chunk_len with `pad`. An empty prompt is EOS followed by padding. Weights of
// EOS and padding are 1.
struct T5Chunks {
    std::vector<int> tokens;  // n_chunks * chunk_len
    std::vector<float> weights;
    std::vector<uint8_t> real;  // 1 for prompt tokens and EOS, 0 for padding
    int n_chunks = 0;
};
T5Chunks make_t5_chunks(const std::vector<int>& tokens, const std::vector<float>& weights, int eos,
                        int pad, int chunk_len);

}  // namespace ggdiff
