// Gemma's tokenizer for users who have only the .gguf: the SentencePiece vocabulary a llama.cpp
// GGUF of Gemma carries (tokenizer.ggml.model "llama" with tokenizer.ggml.tokens, .scores and
// .token_type), and the order PiD looks for a tokenizer in.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "tokenizers/gemma_tokenizer.h"

namespace ggdiff::models {

// The tokenizer stored in GGUF file `path` (GemmaTokenizer::from_sentencepiece). The error says
// what the file lacks (not a GGUF, no tokenizer.ggml.tokens, a model other than "llama", no
// scores).
Result<GemmaTokenizer> read_gemma_gguf_vocab(const std::string& path,
                                             GemmaVersion version = GemmaVersion::kGemma2);

// --llm-tokenizer `flag` (a tokenizer.json, a folder holding one, or a GGUF holding a
// vocabulary), else the tokenizer.json find_gemma_tokenizer finds beside `model_paths`, else
// the vocabulary in the GGUF `llm` (the --llm file). `source` receives where it came from.
// Without any, the error names every folder looked in and why `llm` has none.
Result<GemmaTokenizer> load_gemma_tokenizer(const std::vector<std::string>& model_paths,
                                            const std::string& flag, const std::string& llm,
                                            std::string* source,
                                            GemmaVersion version = GemmaVersion::kGemma2);

// Gemma 3's tokenizer (LTX-2's text encoder) found as load_gemma_tokenizer finds Gemma's:
// --llm-tokenizer `flag`, a tokenizer.json beside `model_paths` (the --llm file first), the
// --llm GGUF's own vocabulary; the error names every place it looked.
Result<GemmaTokenizer> load_gemma3_tokenizer(const std::vector<std::string>& model_paths,
                                             const std::string& flag, const std::string& llm,
                                             std::string* source);

}  // namespace ggdiff::models
