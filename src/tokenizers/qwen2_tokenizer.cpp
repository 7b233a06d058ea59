#include "tokenizers/qwen2_tokenizer.h"

#include <algorithm>
#include <climits>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/log.h"
#include "core/safe_text.h"
#include "tokenizers/byte_level_bpe.h"
#include "tokenizers/tokenizer_files.h"
#include "tokenizers/unicode.h"

namespace ggdiff {

namespace fs = std::filesystem;

namespace {

// {"content": "<|im_start|>", "id": 151644, ...} as added_tokens lists them.
bool added_token_entry(const nlohmann::json& t, std::string* content, int* id) {
    if (!t.is_object() || !t.contains("content") || !t["content"].is_string() ||
        !t.contains("id") || !t["id"].is_number_integer()) {
        return false;
    }
    const long long v = t["id"].get<long long>();
    if (v < 0 || v > INT_MAX) return false;
    *content = t["content"].get<std::string>();
    *id = static_cast<int>(v);
    return true;
}

// A vocabulary id: an integer in [0, INT_MAX].
bool vocab_id(const nlohmann::json& v, int* id) {
    if (!v.is_number_integer()) return false;
    const long long n = v.get<long long>();
    if (n < 0 || n > INT_MAX) return false;
    *id = static_cast<int>(n);
    return true;
}

bool is_newline(char32_t c) {
    return c == U'\r' || c == U'\n';
}

bool is_other(char32_t c) {  // [^\s\p{L}\p{N}]
    return !unicode::is_space(c) && !unicode::is_letter(c) && !unicode::is_number(c);
}

char32_t lower_ascii(char32_t c) {
    return c >= U'A' && c <= U'Z' ? c + 32 : c;
}

// Length of the match of Qwen2's pre-tokenizer at s[i] (at least 1).
size_t match_at(const std::u32string& s, size_t i) {
    const size_t n = s.size();
    // (?i:'s|'t|'re|'ve|'m|'ll|'d)
    if (s[i] == U'\'' && i + 1 < n) {
        const char32_t a = lower_ascii(s[i + 1]);
        const char32_t b = i + 2 < n ? lower_ascii(s[i + 2]) : 0;
        if (a == U's' || a == U't' || a == U'm' || a == U'd') return 2;
        if ((a == U'r' && b == U'e') || (a == U'v' && b == U'e') || (a == U'l' && b == U'l'))
            return 3;
    }
    // [^\r\n\p{L}\p{N}]?\p{L}+
    {
        size_t j = i;
        if (!is_newline(s[j]) && !unicode::is_letter(s[j]) && !unicode::is_number(s[j]) &&
            j + 1 < n && unicode::is_letter(s[j + 1])) {
            ++j;
        }
        if (unicode::is_letter(s[j])) {
            while (j < n && unicode::is_letter(s[j])) ++j;
            return j - i;
        }
    }
    // \p{N}
    if (unicode::is_number(s[i])) return 1;
    // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
    {
        size_t j = i;
        if (s[j] == U' ' && j + 1 < n && is_other(s[j + 1])) ++j;
        if (is_other(s[j])) {
            while (j < n && is_other(s[j])) ++j;
            while (j < n && is_newline(s[j])) ++j;
            return j - i;
        }
    }
    // \s*[\r\n]+|\s+(?!\S)|\s+
    if (const size_t ws = byte_level::match_whitespace(s, i)) return ws;
    return 1;
}

}  // namespace

std::vector<std::string> Qwen2Tokenizer::pre_tokenize(const std::string& text) {
    const std::u32string s = unicode::decode_utf8(text);
    std::vector<std::string> out;
    for (size_t i = 0; i < s.size();) {
        const size_t len = match_at(s, i);
        out.push_back(unicode::encode_utf8(std::u32string_view(s).substr(i, len)));
        i += len;
    }
    return out;
}

Status Qwen2Tokenizer::add_special(const std::string& content, int id) {
    if (content.empty() || id < 0) return Status::Error("bad added token \"" + content + "\"");
    for (auto& [c, i] : added_) {
        if (c == content) {
            i = id;
            return Status::Ok();
        }
    }
    added_.emplace_back(content, id);
    return Status::Ok();
}

Status Qwen2Tokenizer::finish() {
    byte_encoder_ = byte_level::byte_symbols();
    for (int b = 0; b < 256; ++b) byte_decoder_[byte_encoder_[b]] = static_cast<unsigned char>(b);
    for (const auto& [token, id] : encoder_) decoder_[id] = token;
    for (const auto& [token, id] : added_) decoder_[id] = token;
    // Longest first, so that a token containing another is matched whole.
    std::stable_sort(added_.begin(), added_.end(),
                     [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
    if (added_.empty()) {
        return Status::Error(
            "no special tokens (<|im_start|>, <|im_end|>, ...): an added_tokens.json, "
            "tokenizer_config.json or tokenizer.json must come with the vocabulary");
    }
    return Status::Ok();
}

Result<Qwen2Tokenizer> Qwen2Tokenizer::from_vocab_and_merges(const std::string& vocab_json_path,
                                                             const std::string& merges_path) {
    Qwen2Tokenizer tok;
    auto vocab = read_tokenizer_json(vocab_json_path);
    if (!vocab.ok()) return vocab.status();
    if (!vocab->is_object() || vocab->empty()) {
        return Status::Error(vocab_json_path + ": not a token -> id map");
    }
    for (auto it = vocab->begin(); it != vocab->end(); ++it) {
        int id = -1;
        if (!vocab_id(it.value(), &id)) {
            return Status::Error(quote_name(vocab_json_path) + ": the id of " +
                                 quote_name(it.key()) + " is not an integer in [0, 2^31)");
        }
        tok.encoder_[it.key()] = id;
    }
    auto merges = read_tokenizer_text(merges_path);
    if (!merges.ok()) return merges.status();
    std::istringstream in(*merges);
    std::string line;
    int rank = 0;
    while (std::getline(in, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty() || line.rfind("#version", 0) == 0) continue;
        const size_t space = line.find(' ');
        if (space == std::string::npos || space == 0 || space + 1 == line.size()) {
            return Status::Error(merges_path + ": line \"" + line + "\" is not a merge \"a b\"");
        }
        tok.ranks_.emplace(line, rank++);
    }
    if (rank == 0) return Status::Error(merges_path + ": no merges");

    // Added tokens: added_tokens.json, else tokenizer_config.json, beside the vocabulary.
    const fs::path dir = fs::path(vocab_json_path).parent_path();
    std::error_code ec;
    if (fs::is_regular_file(dir / "added_tokens.json", ec)) {
        auto added = read_tokenizer_json((dir / "added_tokens.json").string());
        if (!added.ok()) return added.status();
        if (added->contains("added_tokens") && (*added)["added_tokens"].is_array()) {
            for (const auto& t : (*added)["added_tokens"]) {
                std::string content;
                int id = -1;
                if (!added_token_entry(t, &content, &id)) {
                    return Status::Error(quote_name((dir / "added_tokens.json").string()) +
                                         ": an added token is not {\"content\": text, \"id\": n}");
                }
                GGDIFF_TRY(tok.add_special(content, id));
            }
        } else if (added->is_object()) {
            for (auto it = added->begin(); it != added->end(); ++it) {
                int id = -1;
                if (vocab_id(it.value(), &id)) GGDIFF_TRY(tok.add_special(it.key(), id));
            }
        }
    }
    if (tok.added_.empty() && fs::is_regular_file(dir / "tokenizer_config.json", ec)) {
        auto cfg = read_tokenizer_json((dir / "tokenizer_config.json").string());
        if (!cfg.ok()) return cfg.status();
        if (cfg->contains("added_tokens_decoder") && (*cfg)["added_tokens_decoder"].is_object()) {
            const auto& dec = (*cfg)["added_tokens_decoder"];
            for (auto it = dec.begin(); it != dec.end(); ++it) {
                int id = -1;
                try {
                    id = std::stoi(it.key());
                } catch (const std::exception&) {
                    continue;
                }
                const auto& entry = it.value();
                if (!entry.is_object() || !entry.contains("content") ||
                    !entry["content"].is_string()) {
                    continue;
                }
                GGDIFF_TRY(tok.add_special(entry["content"].get<std::string>(), id));
            }
        }
    }
    Status st = tok.finish();
    if (!st.ok()) return st.with_context(dir.string());
    return tok;
}

Result<Qwen2Tokenizer> Qwen2Tokenizer::from_tokenizer_json(const std::string& path) {
    auto j = read_tokenizer_json(path);
    if (!j.ok()) return j.status();
    Qwen2Tokenizer tok;
    if (!j->is_object() || !j->contains("model") || !(*j)["model"].is_object() ||
        !(*j)["model"].contains("vocab") || !(*j)["model"]["vocab"].is_object() ||
        !(*j)["model"].contains("merges") || !(*j)["model"]["merges"].is_array()) {
        return Status::Error(path + ": no model.vocab / model.merges (not a BPE tokenizer.json)");
    }
    const auto& model = (*j)["model"];
    for (auto it = model["vocab"].begin(); it != model["vocab"].end(); ++it) {
        int id = -1;
        if (vocab_id(it.value(), &id)) tok.encoder_[it.key()] = id;
    }
    int rank = 0;
    for (const auto& m : model["merges"]) {
        std::string merge;
        if (m.is_string()) {
            merge = m.get<std::string>();
        } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
            merge = m[0].get<std::string>() + " " + m[1].get<std::string>();
        } else {
            return Status::Error(path + ": merge " + std::to_string(rank + 1) + " is malformed");
        }
        tok.ranks_.emplace(merge, rank++);
    }
    if (j->contains("added_tokens") && (*j)["added_tokens"].is_array()) {
        for (const auto& t : (*j)["added_tokens"]) {
            std::string content;
            int id = -1;
            if (!added_token_entry(t, &content, &id)) {
                return Status::Error(path +
                                     ": an added token is not {\"content\": text, \"id\": n}");
            }
            GGDIFF_TRY(tok.add_special(content, id));
        }
    }
    if (tok.encoder_.empty() || rank == 0) return Status::Error(path + ": empty vocabulary");
    Status st = tok.finish();
    if (!st.ok()) return st.with_context(path);
    return tok;
}

Result<Qwen2Tokenizer> Qwen2Tokenizer::from_token_list(const std::vector<std::string>& tokens,
                                                       const std::vector<std::string>& merges,
                                                       const std::vector<int64_t>& token_types,
                                                       const std::string& origin) {
    enum : int64_t { kControl = 3, kUserDefined = 4, kUnused = 5 };
    if (tokens.empty() || merges.empty()) return Status::Error(origin + ": empty vocabulary");
    if (tokens.size() > static_cast<size_t>(INT_MAX)) {
        return Status::Error(origin + ": too many tokens");
    }
    if (!token_types.empty() && token_types.size() != tokens.size()) {
        return Status::Error(origin + string_format(": %zu token types for %zu tokens",
                                                    token_types.size(), tokens.size()));
    }
    Qwen2Tokenizer tok;
    for (size_t i = 0; i < tokens.size(); ++i) {
        const int64_t type = token_types.empty() ? 1 : token_types[i];
        const int id = static_cast<int>(i);
        if (type == kUnused || tokens[i].empty()) continue;
        if (type == kControl || type == kUserDefined) {
            GGDIFF_TRY(tok.add_special(tokens[i], id));
        } else {
            tok.encoder_.emplace(tokens[i], id);
        }
    }
    int rank = 0;
    for (const std::string& m : merges) {
        const size_t space = m.find(' ');
        if (space == std::string::npos || space == 0 || space + 1 == m.size()) {
            return Status::Error(origin + ": merge " + std::to_string(rank + 1) + " (" +
                                 quote_name(m) + ") is not \"a b\"");
        }
        tok.ranks_.emplace(m, rank++);
    }
    Status st = tok.finish();
    if (!st.ok()) return st.with_context(origin);
    return tok;
}

Result<Qwen2Tokenizer> Qwen2Tokenizer::from_path(const std::string& path) {
    std::error_code ec;
    const fs::path p(path);
    if (fs::is_directory(p, ec)) {
        if (fs::is_regular_file(p / "vocab.json", ec) && fs::is_regular_file(p / "merges.txt", ec))
            return from_vocab_and_merges((p / "vocab.json").string(), (p / "merges.txt").string());
        if (fs::is_regular_file(p / "tokenizer.json", ec))
            return from_tokenizer_json((p / "tokenizer.json").string());
        return Status::Error(path + ": no vocab.json + merges.txt or tokenizer.json in the folder");
    }
    if (p.filename() == "vocab.json") {
        return from_vocab_and_merges(path, (p.parent_path() / "merges.txt").string());
    }
    return from_tokenizer_json(path);
}

int Qwen2Tokenizer::token_to_id(const std::string& token) const {
    for (const auto& [c, id] : added_) {
        if (c == token) return id;
    }
    auto it = encoder_.find(token);
    return it == encoder_.end() ? -1 : it->second;
}

std::vector<std::string> Qwen2Tokenizer::bpe(const std::string& piece) const {
    std::vector<std::string> word;
    word.reserve(piece.size());
    for (unsigned char b : piece) word.push_back(byte_encoder_[b]);
    std::string key;
    return byte_level::merge(std::move(word), [&](const std::string& a, const std::string& b) {
        key.assign(a).append(" ").append(b);
        auto it = ranks_.find(key);
        return it == ranks_.end() ? -1 : it->second;
    });
}

std::vector<int> Qwen2Tokenizer::encode_plain(const std::string& text) const {
    std::vector<int> ids;
    for (const std::string& piece : pre_tokenize(text)) {
        for (const std::string& sym : bpe(piece)) {
            auto it = encoder_.find(sym);
            if (it != encoder_.end()) {
                ids.push_back(it->second);
            } else {
                // A symbol outside the vocabulary: fall back to its byte symbols.
                const std::u32string cps = unicode::decode_utf8(sym);
                for (char32_t c : cps) {
                    std::string one;
                    unicode::append_utf8(one, c);
                    auto single = encoder_.find(one);
                    if (single != encoder_.end()) ids.push_back(single->second);
                }
            }
        }
    }
    return ids;
}

std::vector<int> Qwen2Tokenizer::encode(const std::string& text) const {
    // Added tokens all begin with '<' ("<|im_start|>", "<think>").
    return byte_level::encode_with_specials(
        text, added_, [](unsigned char c) { return c == '<'; },
        [this](const std::string& run) { return encode_plain(run); });
}

std::string Qwen2Tokenizer::decode(const std::vector<int>& ids) const {
    std::string out;
    for (int id : ids) {
        auto it = decoder_.find(id);
        if (it == decoder_.end()) continue;
        bool special = false;
        for (const auto& a : added_) special |= a.second == id;
        if (special) {
            out += it->second;
            continue;
        }
        const std::u32string cps = unicode::decode_utf8(it->second);
        for (char32_t c : cps) {
            std::string one;
            unicode::append_utf8(one, c);
            auto b = byte_decoder_.find(one);
            if (b != byte_decoder_.end()) out.push_back(static_cast<char>(b->second));
        }
    }
    return out;
}

}  // namespace ggdiff
