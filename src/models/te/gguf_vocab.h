// The tokenizer vocabulary a llama.cpp GGUF carries (tokenizer.ggml.*), read for the text
// encoders whose users may have only the .gguf (GPT-OSS: models/te/gpt_oss_tokenizer.h; Gemma:
// models/te/gemma_vocab.h).
#pragma once

#include <string>

#include "core/status.h"
#include "io/checkpoint_file.h"

namespace ggdiff::models {

// The tokenizer.ggml.* arrays of GGUF file `path`, checked to hold tokenizer.ggml.tokens and
// tokenizer.ggml.model `model`; `kind` says what that model is in the error ("the byte-level
// BPE GPT-OSS uses"). The error says what the file lacks.
Result<GgufArrays> read_gguf_vocab_arrays(const std::string& path, const std::string& model,
                                          const std::string& kind);

}  // namespace ggdiff::models
