#include "tokenizers/tokenizer_files.h"

#include "core/read_file.h"
#include "core/safe_text.h"

namespace ggdiff {

Result<std::string> read_tokenizer_text(const std::string& path) {
    return read_text_file(path, kMaxTokenizerFileBytes);
}

Result<nlohmann::json> read_tokenizer_json(const std::string& path) {
    auto text = read_tokenizer_text(path);
    if (!text.ok()) return text.status();
    return parse_tokenizer_json(*text, quote_name(path));
}

Result<nlohmann::json> parse_tokenizer_json(const std::string& text, const std::string& origin) {
    Status depth = check_json_nesting(text, kMaxTokenizerJsonDepth);
    if (!depth.ok()) return depth.with_context(origin);
    auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return Status::Error(origin + " is not valid JSON");
    return j;
}

}  // namespace ggdiff
