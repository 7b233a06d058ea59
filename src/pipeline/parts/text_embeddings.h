// Textual-inversion embeddings (--embd-dir) for the CLIP text encoders of SD1, SD2 and SDXL.
//
// Every DIR/*.safetensors or *.gguf file is an embedding named by its file stem, lower-cased.
// The name is cut out of the normalized prompt wherever it occurs, even inside a word (see
// ClipTokenizer::split_special), and stands for the file's rows: one token position per row,
// whose input vector is the row instead of a row of CLIP's token table. Its ids are appended
// after the vocabulary (49408 + k, per prompt); a prompt weight "(name:1.2)" applies to all
// its rows.
//
// A file holds [n, width] (or [width]) tensors: SD1 and SD2 files one of the encoder's width
// (768 / 1024, any name; A1111 writes "emb_params"), SDXL files A1111's "clip_l" [n, 768] and
// "clip_g" [n, 1280], each encoder getting its own vectors at the same n positions. Files are
// read when a prompt first names them, so a bad file only fails the prompts that use it.
// PyTorch files (.pt, .bin; A1111's "string_to_param.*") are read as data, never run; a
// safetensors or GGUF file of the same name wins over them.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "tokenizers/clip_tokenizer.h"

namespace ggdiff {

// The embeddings one prompt uses.
struct PromptEmbeddings {
    ClipSpecialWords words;  // the names found in the prompt -> their token ids
    int first_id = 0;        // id of row 0 of the tables
    // One table per encoder (the order of the library's widths): row k, of that encoder's
    // width, is the input vector of token id first_id + k.
    std::vector<std::vector<float>> tables;
    bool empty() const { return words.words.empty(); }
    // The vectors of ids in [first_id, first_id + rows) for encoder `e`, with the other
    // positions' ids kept: what the CLIP graph's ClipTokenOverride takes. `ids` are made valid
    // token table rows (0) where an embedding stands.
    struct Override {
        std::vector<float> vectors;  // [width, ids.size()]
        std::vector<float> keep;     // [ids.size()]
        bool any = false;
    };
    Override override_for(size_t e, int64_t width, std::vector<int32_t>& ids) const;
};

class TextEmbeddings {
  public:
    // Lists `dir`'s embedding files. `widths`: the token width of each text encoder (768 for
    // SD1, 1024 for SD2, 768 and 1280 for SDXL); `encoders` names them for messages;
    // `first_id`: the first id past the vocabulary.
    static Result<std::shared_ptr<TextEmbeddings>> open(const std::string& dir,
                                                        std::vector<int64_t> widths,
                                                        std::vector<std::string> encoders,
                                                        int first_id);

    // The embeddings `prompt` names (after its emphasis syntax is parsed), loaded; an
    // embedding whose file cannot be used is an error naming the file.
    Result<PromptEmbeddings> for_prompt(const std::string& prompt);

    // Names (lower-cased file stems), sorted.
    std::vector<std::string> names() const;
    // A1111's "TI hashes" value ("name: 0123456789ab, ...") of the embeddings used since the
    // last call (each once), then forgets them; empty when none was.
    std::string take_hashes();

  private:
    struct Entry {
        std::string path;
        bool loaded = false;
        int64_t rows = 0;
        std::vector<std::vector<float>> vectors;  // per encoder: [width, rows]
        std::string hash;                         // 12 hex digits
    };
    Status load(const std::string& name, Entry& e) const;

    std::string dir_;
    std::vector<int64_t> widths_;
    std::vector<std::string> encoders_;
    int first_id_ = 0;
    std::map<std::string, Entry> entries_;  // by name
    std::vector<std::string> used_;         // since the last take_hashes()
};

}  // namespace ggdiff
