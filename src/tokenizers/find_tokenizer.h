// Where the CLIP vocabulary comes from.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "tokenizers/clip_tokenizer.h"

namespace ggdiff {

// Returns a path for ClipTokenizer::from_path(), searching in this order:
//  1. `tokenizer_flag` (--tokenizer) when not empty: a merges.txt file, a tokenizer.json, a
//     vocab.json with merges.txt beside it, a folder holding merges.txt (+ vocab.json) or
//     tokenizer.json, or a diffusers model folder holding tokenizer/; anything else is an
//     error naming the flag;
//  2. a diffusers tokenizer/ folder in the model's folder or in that folder's parent
//     (model.safetensors next to tokenizer/, or unet/ and text_encoder/ beside tokenizer/).
// "" when there is no flag and no such folder.
Result<std::string> find_clip_merges(const std::string& model_path,
                                     const std::string& tokenizer_flag);

// The CLIP tokenizer for a model, from the first of: --tokenizer, the merge list embedded
// in the checkpoint (`embedded_merges`, may be null), a tokenizer/ folder beside the model
// (find_clip_merges), the built-in list. `source` (may be null) says which one was used.
Result<ClipTokenizer> open_clip_tokenizer(const std::string& model_path,
                                          const std::string& tokenizer_flag,
                                          const std::string* embedded_merges,
                                          std::string* source = nullptr);

// A path for Qwen2Tokenizer::from_path() (vocab.json + merges.txt, or tokenizer.json):
//  1. `tokenizer_flag` (--llm-tokenizer) when not empty: such a folder, a tokenizer.json or
//     vocab.json, or a folder holding tokenizer/;
//  2. the folder of each of `model_paths` (the --llm file first, then the main model), its
//     tokenizer/ subfolder, and the tokenizer/ folder beside it (diffusers layout).
// Otherwise the error says what to pass and where it looked.
Result<std::string> find_llm_tokenizer(const std::vector<std::string>& model_paths,
                                       const std::string& tokenizer_flag);

// A path for MistralTokenizer::from_path() (tekken.json or tokenizer.json), the same way:
//  1. `tokenizer_flag` (--llm-tokenizer) when not empty: the file itself, or a folder holding
//     tekken.json or tokenizer.json, or a tokenizer/ folder that does;
//  2. the folder of each of `model_paths`, its tokenizer/ subfolder, and the tokenizer/ folder
//     beside it.
// Otherwise the error says what to pass and where it looked.
Result<std::string> find_mistral_tokenizer(const std::vector<std::string>& model_paths,
                                           const std::string& tokenizer_flag);

// The T5 tokenizer.json, searching in this order:
//  1. `flag` (--t5xxl-tokenizer) when not empty: the file itself, or a folder holding
//     tokenizer.json, tokenizer_2/tokenizer.json or tokenizer_3/tokenizer.json (or
//     tokenizer/tokenizer.json beside a T5 text_encoder/);
//  2. beside each path in `near` (the T5 weights, the main model; a file's folder, or the
//     folder itself): tokenizer.json, then tokenizer_2/ and tokenizer_3/ in that folder
//     and in its parent (a diffusers text_encoder_2/ sits next to tokenizer_2/), then
//     tokenizer/ in either when the text_encoder/ beside it is T5 (config.json's model_type;
//     a Chroma pipeline's only text encoder).
// Otherwise the error says what to pass and where it looked.
Result<std::string> find_t5_tokenizer(const std::vector<std::string>& near,
                                      const std::string& flag);

}  // namespace ggdiff
