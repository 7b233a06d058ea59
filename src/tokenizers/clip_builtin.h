// The CLIP BPE merge list compiled into the library (data/clip/merges.txt.gz, OpenAI
// CLIP's list, MIT-licensed), so checkpoints without tokenizer files just work.
#pragma once

#include <string>

#include "core/status.h"
#include "tokenizers/clip_tokenizer.h"

namespace ggdiff {

// The merges.txt text (version header line, then one merge per line).
Result<std::string> builtin_clip_merges();

// A tokenizer built from it.
Result<ClipTokenizer> builtin_clip_tokenizer();

}  // namespace ggdiff
