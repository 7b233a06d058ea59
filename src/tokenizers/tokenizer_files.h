// Reading tokenizer files (vocab.json, merges.txt, tokenizer.json, added_tokens.json,
// tokenizer_config.json) as the hostile input they may be: at most kMaxTokenizerFileBytes
// (the largest real ones, Qwen2's tokenizer.json, are about 7 MB), JSON nested at most
// kMaxTokenizerJsonDepth deep, and a FIFO or /dev/zero stops at the limit instead of filling
// memory. Errors name the file.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace ggdiff {

constexpr uint64_t kMaxTokenizerFileBytes = 64ull << 20;
constexpr int kMaxTokenizerJsonDepth = 64;

Result<std::string> read_tokenizer_text(const std::string& path);
Result<nlohmann::json> read_tokenizer_json(const std::string& path);
// JSON text from elsewhere (e.g. bytes stored in a checkpoint), checked the same way; `origin`
// names it in errors.
Result<nlohmann::json> parse_tokenizer_json(const std::string& text, const std::string& origin);

}  // namespace ggdiff
