// Where the CLIP merge list comes from when the checkpoint does not embed one.
#pragma once

#include <string>

#include "core/status.h"

namespace ggdiff {

// Returns a path for ClipTokenizer::from_path(), searching in this order:
//  1. `tokenizer_flag` (--tokenizer) when not empty: a merges.txt file, a tokenizer.json, a
//     vocab.json with merges.txt beside it, a folder holding merges.txt (+ vocab.json) or
//     tokenizer.json, or a diffusers model folder holding tokenizer/;
//  2. a diffusers tokenizer/ folder in the model's folder or in that folder's parent
//     (model.safetensors next to tokenizer/, or unet/ and text_encoder/ beside tokenizer/).
// Otherwise the error says what to pass.
Result<std::string> find_clip_merges(const std::string& model_path,
                                     const std::string& tokenizer_flag);

}  // namespace ggdiff
