#include "tokenizers/mistral_tokenizer.h"

#include <algorithm>
#include <climits>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/base64.h"
#include "core/log.h"
#include "core/safe_text.h"
#include "tokenizers/byte_level_bpe.h"
#include "tokenizers/tokenizer_files.h"
#include "tokenizers/unicode.h"

namespace ggdiff {

namespace fs = std::filesystem;

namespace {

constexpr const char* kPattern =
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+|"
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*|"
    "\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

// The control tokens of tekken files that do not list theirs (version 7 and older).
constexpr const char* kDefaultSpecials[] = {
    "<unk>",
    "<s>",
    "</s>",
    "[INST]",
    "[/INST]",
    "[AVAILABLE_TOOLS]",
    "[/AVAILABLE_TOOLS]",
    "[TOOL_RESULTS]",
    "[/TOOL_RESULTS]",
    "[TOOL_CALLS]",
    "[IMG]",
    "<pad>",
    "[IMG_BREAK]",
    "[IMG_END]",
    "[PREFIX]",
    "[MIDDLE]",
    "[SUFFIX]",
    "[SYSTEM_PROMPT]",
    "[/SYSTEM_PROMPT]",
    "[TOOL_CONTENT]",
};

constexpr size_t kNone = static_cast<size_t>(-1);

bool is_newline(char32_t c) {
    return c == U'\r' || c == U'\n';
}

// [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]: letters that are not lowercase, and marks.
bool is_upper_class(char32_t c) {
    return (unicode::is_letter(c) && !unicode::is_lowercase(c)) || unicode::is_mark(c);
}

// [\p{Ll}\p{Lm}\p{Lo}\p{M}]: letters that are not upper- or titlecase, and marks.
bool is_lower_class(char32_t c) {
    return (unicode::is_letter(c) && !unicode::is_upper_title(c)) || unicode::is_mark(c);
}

// [^\r\n\p{L}\p{N}]
bool is_prefix(char32_t c) {
    return !is_newline(c) && !unicode::is_letter(c) && !unicode::is_number(c);
}

// [^\s\p{L}\p{N}]
bool is_other(char32_t c) {
    return !unicode::is_space(c) && !unicode::is_letter(c) && !unicode::is_number(c);
}

size_t run_of(const std::u32string& s, size_t j, bool (*in)(char32_t)) {
    while (j < s.size() && in(s[j])) ++j;
    return j;
}

// End of [upper]*[lower]+ at s[j] as a backtracking regex matches it (the upper run gives
// back characters until a lower-class one follows), or kNone.
size_t upper_then_lower(const std::u32string& s, size_t j) {
    const size_t u = run_of(s, j, is_upper_class);
    for (size_t k = u + 1; k-- > j;) {
        if (k < s.size() && is_lower_class(s[k])) return run_of(s, k, is_lower_class);
    }
    return kNone;
}

// Length of the match of the Tekken pattern at s[i] (at least 1).
size_t match_at(const std::u32string& s, size_t i) {
    const size_t n = s.size();
    const bool prefix = is_prefix(s[i]) && i + 1 < n;
    // [^\r\n\p{L}\p{N}]?[upper]*[lower]+
    if (prefix) {
        const size_t e = upper_then_lower(s, i + 1);
        if (e != kNone) return e - i;
    }
    if (const size_t e = upper_then_lower(s, i); e != kNone) return e - i;
    // [^\r\n\p{L}\p{N}]?[upper]+[lower]*
    for (size_t j : {prefix ? i + 1 : kNone, i}) {
        if (j != kNone && is_upper_class(s[j])) {
            return run_of(s, run_of(s, j, is_upper_class), is_lower_class) - i;
        }
    }
    // \p{N}
    if (unicode::is_number(s[i])) return 1;
    // ' ?[^\s\p{L}\p{N}]+[\r\n/]*'
    {
        size_t j = i;
        if (s[j] == U' ' && j + 1 < n && is_other(s[j + 1])) ++j;
        if (is_other(s[j])) {
            j = run_of(s, j, is_other);
            while (j < n && (is_newline(s[j]) || s[j] == U'/')) ++j;
            return j - i;
        }
    }
    // \s*[\r\n]+|\s+(?!\S)|\s+
    if (const size_t ws = byte_level::match_whitespace(s, i)) return ws;
    return 1;
}

bool json_int(const nlohmann::json& j, const char* key, long long lo, long long hi,
              long long* out) {
    if (!j.is_object() || !j.contains(key) || !j[key].is_number_integer()) return false;
    const long long v = j[key].get<long long>();
    if (v < lo || v > hi) return false;
    *out = v;
    return true;
}

// The regex of a tokenizer.json pre-tokenizer ({"type": "Split", "pattern": {"Regex": ...}}
// alone or inside a Sequence), or "".
std::string split_pattern(const nlohmann::json& pre) {
    if (!pre.is_object()) return "";
    if (pre.contains("pretokenizers") && pre["pretokenizers"].is_array()) {
        for (const auto& p : pre["pretokenizers"]) {
            std::string r = split_pattern(p);
            if (!r.empty()) return r;
        }
        return "";
    }
    if (pre.contains("type") && pre["type"].is_string() && pre["type"] == "Split" &&
        pre.contains("pattern") && pre["pattern"].is_object() && pre["pattern"].contains("Regex") &&
        pre["pattern"]["Regex"].is_string()) {
        return pre["pattern"]["Regex"].get<std::string>();
    }
    return "";
}

void check_pattern(const std::string& found, const std::string& origin) {
    if (found != kPattern) {
        GGDIFF_LOG_WARN("%s: pre-tokenizer pattern %s is not Tekken's; splitting with Tekken's",
                        origin.c_str(), found.empty() ? "(none)" : quote_name(found).c_str());
    }
}

}  // namespace

const char* MistralTokenizer::pattern() {
    return kPattern;
}

std::vector<std::string> MistralTokenizer::pre_tokenize(const std::string& text) {
    const std::u32string s = unicode::decode_utf8(text);
    std::vector<std::string> out;
    for (size_t i = 0; i < s.size();) {
        const size_t len = match_at(s, i);
        out.push_back(unicode::encode_utf8(std::u32string_view(s).substr(i, len)));
        i += len;
    }
    return out;
}

Status MistralTokenizer::add_special(const std::string& content, int id) {
    if (content.empty() || id < 0) return Status::Error("bad special token " + quote_name(content));
    for (auto& [c, i] : specials_) {
        if (c == content) {
            i = id;
            return Status::Ok();
        }
    }
    specials_.emplace_back(content, id);
    return Status::Ok();
}

Status MistralTokenizer::finish(const std::string& origin) {
    byte_symbol_ = byte_level::byte_symbols();
    for (int b = 0; b < 256; ++b) symbol_byte_[byte_symbol_[b]] = static_cast<unsigned char>(b);
    for (const auto& [token, id] : vocab_) id_to_token_[id] = token;
    std::stable_sort(specials_.begin(), specials_.end(),
                     [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
    for (const auto& [token, id] : specials_) {
        special_by_id_[id] = token;
        special_first_byte_[static_cast<unsigned char>(token[0])] = true;
    }
    bos_ = token_to_id("<s>");
    if (bos_ < 0) {
        return Status::Error(origin +
                             ": no <s> special token (not a Mistral tokenizer: pass its "
                             "tekken.json or tokenizer.json)");
    }
    if (vocab_.empty()) return Status::Error(origin + ": empty vocabulary");
    return Status::Ok();
}

Result<MistralTokenizer> MistralTokenizer::from_tekken_text(const std::string& text,
                                                            const std::string& origin) {
    auto parsed = parse_tokenizer_json(text, origin);
    if (!parsed.ok()) return parsed.status();
    return from_tekken(*parsed, origin);
}

Result<MistralTokenizer> MistralTokenizer::from_tekken(const nlohmann::json& j,
                                                       const std::string& origin) {
    if (!j.is_object() || !j.contains("config") || !j["config"].is_object() ||
        !j.contains("vocab") || !j["vocab"].is_array()) {
        return Status::Error(origin + ": no config / vocab (not a tekken.json)");
    }
    const auto& config = j["config"];
    const auto& vocab = j["vocab"];
    const bool listed = j.contains("special_tokens") && j["special_tokens"].is_array();
    const size_t listed_count = listed ? j["special_tokens"].size() : std::size(kDefaultSpecials);
    long long num_special = static_cast<long long>(listed_count);
    if (config.contains("default_num_special_tokens") &&
        !json_int(config, "default_num_special_tokens", 1, 1 << 20, &num_special)) {
        return Status::Error(origin + ": config.default_num_special_tokens is not a count");
    }
    long long vocab_size = num_special + static_cast<long long>(vocab.size());
    if (config.contains("default_vocab_size") &&
        !json_int(config, "default_vocab_size", 1, INT_MAX, &vocab_size)) {
        return Status::Error(origin + ": config.default_vocab_size is not a count");
    }
    const long long inner = vocab_size - num_special;
    if (inner < 256 || inner > static_cast<long long>(vocab.size())) {
        return Status::Error(string_format(
            "%s: %lld regular tokens (vocabulary size %lld less %lld special tokens), but the "
            "vocab lists %zu and needs the 256 bytes first",
            origin.c_str(), inner, vocab_size, num_special, vocab.size()));
    }
    check_pattern(config.contains("pattern") && config["pattern"].is_string()
                      ? config["pattern"].get<std::string>()
                      : std::string(),
                  origin);

    MistralTokenizer tok;
    tok.tiktoken_ranks_ = true;
    tok.whole_piece_lookup_ = true;
    const std::array<std::string, 256> symbols = byte_level::byte_symbols();
    tok.vocab_.reserve(static_cast<size_t>(inner));
    tok.token_rank_.reserve(static_cast<size_t>(inner));
    for (long long r = 0; r < inner; ++r) {
        const auto& e = vocab[static_cast<size_t>(r)];
        long long rank = -1;
        if (!json_int(e, "rank", 0, INT_MAX, &rank) || rank != r || !e.contains("token_bytes") ||
            !e["token_bytes"].is_string()) {
            return Status::Error(string_format(
                "%s: vocab entry %lld is not {\"rank\": %lld, \"token_bytes\": base64}",
                origin.c_str(), r, r));
        }
        auto bytes = base64_decode(e["token_bytes"].get<std::string>());
        if (!bytes.ok() || bytes->empty() ||
            (r < 256 && (bytes->size() != 1 || (*bytes)[0] != r))) {
            return Status::Error(string_format("%s: vocab entry %lld has bad token_bytes%s",
                                               origin.c_str(), r,
                                               r < 256 ? " (the first 256 are the bytes)" : ""));
        }
        std::string sym;
        for (uint8_t b : *bytes) sym += symbols[b];
        const int id = static_cast<int>(num_special + r);
        if (!tok.vocab_.emplace(sym, id).second) {
            return Status::Error(
                string_format("%s: vocab entry %lld repeats an earlier token", origin.c_str(), r));
        }
        tok.token_rank_.emplace(std::move(sym), static_cast<int>(r));
    }
    std::vector<bool> taken(static_cast<size_t>(num_special), false);
    for (size_t i = 0; i < listed_count; ++i) {
        std::string content;
        long long rank = static_cast<long long>(i);
        if (listed) {
            const auto& e = j["special_tokens"][i];
            if (!json_int(e, "rank", 0, num_special - 1, &rank) || !e.contains("token_str") ||
                !e["token_str"].is_string()) {
                return Status::Error(string_format(
                    "%s: special token %zu is not {\"rank\": id below %lld, \"token_str\": text}",
                    origin.c_str(), i, num_special));
            }
            content = e["token_str"].get<std::string>();
        } else {
            if (rank >= num_special) break;
            content = kDefaultSpecials[i];
        }
        GGDIFF_TRY(tok.add_special(content, static_cast<int>(rank)));
        taken[static_cast<size_t>(rank)] = true;
    }
    // Unlisted control ids are named <SPECIAL_n>, as mistral_common and tokenizer.json do.
    for (long long r = 0; r < num_special; ++r) {
        if (!taken[static_cast<size_t>(r)]) {
            GGDIFF_TRY(tok.add_special("<SPECIAL_" + std::to_string(r) + ">", static_cast<int>(r)));
        }
    }
    GGDIFF_TRY(tok.finish(origin));
    return tok;
}

Result<MistralTokenizer> MistralTokenizer::from_tekken_file(const std::string& path) {
    auto text = read_tokenizer_text(path);
    if (!text.ok()) return text.status();
    return from_tekken_text(*text, quote_name(path));
}

Result<MistralTokenizer> MistralTokenizer::from_tokenizer_json(const std::string& path) {
    auto parsed = read_tokenizer_json(path);
    if (!parsed.ok()) return parsed.status();
    return from_hf(*parsed, quote_name(path));
}

Result<MistralTokenizer> MistralTokenizer::from_hf(const nlohmann::json& j,
                                                   const std::string& origin) {
    if (!j.is_object() || !j.contains("model") || !j["model"].is_object() ||
        !j["model"].contains("vocab") || !j["model"]["vocab"].is_object() ||
        !j["model"].contains("merges") || !j["model"]["merges"].is_array()) {
        return Status::Error(origin + ": no model.vocab / model.merges (not a BPE tokenizer.json)");
    }
    const auto& model = j["model"];
    MistralTokenizer tok;
    tok.whole_piece_lookup_ = model.contains("ignore_merges") &&
                              model["ignore_merges"].is_boolean() &&
                              model["ignore_merges"].get<bool>();
    for (auto it = model["vocab"].begin(); it != model["vocab"].end(); ++it) {
        if (it.value().is_number_integer()) {
            const long long id = it.value().get<long long>();
            if (id >= 0 && id <= INT_MAX) tok.vocab_[it.key()] = static_cast<int>(id);
        }
    }
    int rank = 0;
    for (const auto& m : model["merges"]) {
        std::string merge;
        if (m.is_string()) {
            merge = m.get<std::string>();
        } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
            merge = m[0].get<std::string>() + " " + m[1].get<std::string>();
        } else {
            return Status::Error(origin + ": merge " + std::to_string(rank + 1) + " is malformed");
        }
        tok.merges_.emplace(std::move(merge), rank++);
    }
    if (j.contains("added_tokens") && j["added_tokens"].is_array()) {
        for (const auto& t : j["added_tokens"]) {
            long long id = -1;
            if (!json_int(t, "id", 0, INT_MAX, &id) || !t.contains("content") ||
                !t["content"].is_string()) {
                return Status::Error(origin +
                                     ": an added token is not {\"content\": text, \"id\": n}");
            }
            GGDIFF_TRY(tok.add_special(t["content"].get<std::string>(), static_cast<int>(id)));
        }
    }
    check_pattern(j.contains("pre_tokenizer") ? split_pattern(j["pre_tokenizer"]) : std::string(),
                  origin);
    GGDIFF_TRY(tok.finish(origin));
    return tok;
}

Result<MistralTokenizer> MistralTokenizer::from_path(const std::string& path) {
    std::error_code ec;
    const fs::path p(path);
    if (fs::is_directory(p, ec)) {
        if (fs::is_regular_file(p / "tekken.json", ec))
            return from_tekken_file((p / "tekken.json").string());
        if (fs::is_regular_file(p / "tokenizer.json", ec))
            return from_tokenizer_json((p / "tokenizer.json").string());
        return Status::Error(quote_name(path) + ": no tekken.json or tokenizer.json in the folder");
    }
    // tekken.json and tokenizer.json are told apart by their content, not their names.
    auto text = read_tokenizer_text(path);
    if (!text.ok()) return text.status();
    auto parsed = parse_tokenizer_json(*text, quote_name(path));
    if (!parsed.ok()) return parsed.status();
    if (parsed->is_object() && parsed->contains("config") && parsed->contains("vocab"))
        return from_tekken(*parsed, quote_name(path));
    return from_hf(*parsed, quote_name(path));
}

int MistralTokenizer::token_to_id(const std::string& token) const {
    for (const auto& [c, id] : specials_) {
        if (c == token) return id;
    }
    auto it = vocab_.find(token);
    return it == vocab_.end() ? -1 : it->second;
}

bool MistralTokenizer::is_special(int id) const {
    return special_by_id_.count(id) != 0;
}

int MistralTokenizer::merge_rank(const std::string& first, const std::string& second) const {
    if (tiktoken_ranks_) {
        auto it = token_rank_.find(first + second);
        return it == token_rank_.end() ? -1 : it->second;
    }
    auto it = merges_.find(first + " " + second);
    return it == merges_.end() ? -1 : it->second;
}

std::vector<int> MistralTokenizer::encode_plain(const std::string& text) const {
    std::vector<int> ids;
    const byte_level::PairRank rank = [this](const std::string& a, const std::string& b) {
        return merge_rank(a, b);
    };
    for (const std::string& piece : pre_tokenize(text)) {
        std::vector<std::string> symbols;
        symbols.reserve(piece.size());
        std::string whole;
        for (unsigned char b : piece) {
            symbols.push_back(byte_symbol_[b]);
            whole += byte_symbol_[b];
        }
        if (whole_piece_lookup_) {
            auto it = vocab_.find(whole);
            if (it != vocab_.end()) {
                ids.push_back(it->second);
                continue;
            }
        }
        for (const std::string& sym : byte_level::merge(std::move(symbols), rank)) {
            auto it = vocab_.find(sym);
            if (it != vocab_.end()) {
                ids.push_back(it->second);
                continue;
            }
            // A symbol outside the vocabulary: its bytes, each a token of its own.
            const std::u32string cps = unicode::decode_utf8(sym);
            for (char32_t c : cps) {
                std::string one;
                unicode::append_utf8(one, c);
                auto single = vocab_.find(one);
                if (single != vocab_.end()) ids.push_back(single->second);
            }
        }
    }
    return ids;
}

std::vector<int> MistralTokenizer::encode(const std::string& text) const {
    return byte_level::encode_with_specials(
        text, specials_, [this](unsigned char c) { return special_first_byte_[c]; },
        [this](const std::string& run) { return encode_plain(run); });
}

std::string MistralTokenizer::decode(const std::vector<int>& ids) const {
    std::string out;
    for (int id : ids) {
        auto sp = special_by_id_.find(id);
        if (sp != special_by_id_.end()) {
            out += sp->second;
            continue;
        }
        auto it = id_to_token_.find(id);
        if (it == id_to_token_.end()) continue;
        for (char32_t c : unicode::decode_utf8(it->second)) {
            std::string one;
            unicode::append_utf8(one, c);
            auto b = symbol_byte_.find(one);
            if (b != symbol_byte_.end()) out.push_back(static_cast<char>(b->second));
        }
    }
    return out;
}

}  // namespace ggdiff
