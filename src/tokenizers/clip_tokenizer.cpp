#include "tokenizers/clip_tokenizer.h"

#include <climits>
#include <filesystem>
#include <fstream>
#include <functional>
#include <queue>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/log.h"
#include "tokenizers/tokenizer_files.h"
#include "tokenizers/unicode.h"

namespace ggdiff {

namespace {

const char kEndOfWord[] = "</w>";
const char kStartOfText[] = "<|startoftext|>";
const char kEndOfText[] = "<|endoftext|>";

// GPT-2/CLIP bytes_to_unicode(): printable bytes stand for themselves, the others for 256 + n.
// Returns (byte, code point) in the order CLIP lists them in its vocabulary.
std::vector<std::pair<int, char32_t>> bytes_to_unicode() {
    std::vector<std::pair<int, char32_t>> pairs;
    std::array<bool, 256> printable{};
    auto add_range = [&](int lo, int hi) {
        for (int b = lo; b <= hi; ++b) {
            printable[static_cast<size_t>(b)] = true;
            pairs.emplace_back(b, static_cast<char32_t>(b));
        }
    };
    add_range('!', '~');
    add_range(0xA1, 0xAC);
    add_range(0xAE, 0xFF);
    int n = 0;
    for (int b = 0; b < 256; ++b) {
        if (!printable[static_cast<size_t>(b)]) {
            pairs.emplace_back(b, static_cast<char32_t>(256 + n));
            ++n;
        }
    }
    return pairs;
}

bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() &&
           s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// CLIP compiles its pattern case-insensitively, and then U+0345 (COMBINING GREEK YPOGEGRAMMENI,
// which case-folds to a letter) matches neither [\p{L}] nor [^\s\p{L}\p{N}]: it is skipped like
// whitespace. gen_unicode_tables.py lists such code points; this is the only one.
bool is_skipped(char32_t cp) {
    return cp == 0x345 || unicode::is_space(cp);
}

// [^\s\p{L}\p{N}] under CLIP's flags.
bool is_other(char32_t cp) {
    return !is_skipped(cp) && !unicode::is_letter(cp) && !unicode::is_number(cp);
}

bool starts_with_at(const std::u32string& s, size_t pos, const char* ascii) {
    for (size_t k = 0; ascii[k] != '\0'; ++k) {
        if (pos + k >= s.size() || s[pos + k] != static_cast<char32_t>(ascii[k])) return false;
    }
    return true;
}

Result<std::unordered_map<std::string, int>> vocab_from_json(const nlohmann::json& j,
                                                             const std::string& what) {
    if (!j.is_object() || j.empty()) return Status::Error(what + " is not a token -> id object");
    std::unordered_map<std::string, int> vocab;
    vocab.reserve(j.size());
    for (auto it = j.begin(); it != j.end(); ++it) {
        if (!it.value().is_number_integer() || it.value().get<long long>() < 0 ||
            it.value().get<long long>() > INT_MAX) {
            return Status::Error(what + ": id of token '" + it.key() + "' is not a valid id");
        }
        vocab[it.key()] = it.value().get<int>();
    }
    return vocab;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Loading

Result<ClipTokenizer::MergeList> ClipTokenizer::parse_merges(const std::string& text,
                                                             bool expect_header) {
    MergeList merges;
    merges.reserve(kNumMerges);
    size_t pos = 0;
    size_t line_no = 0;
    while (pos < text.size() && static_cast<int>(merges.size()) < kNumMerges) {
        size_t end = text.find('\n', pos);
        if (end == std::string::npos) end = text.size();
        std::string line = text.substr(pos, end - pos);
        pos = end + 1;
        ++line_no;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line_no == 1 && expect_header && line.find("#version") != std::string::npos) continue;
        if (line.empty()) continue;
        const size_t space = line.find(' ');
        if (space == 0 || space == std::string::npos || space + 1 == line.size() ||
            line.find(' ', space + 1) != std::string::npos) {
            return Status::Error("line " + std::to_string(line_no) +
                                 " is not a merge (two symbols separated by one space): '" +
                                 line.substr(0, 60) + "'");
        }
        merges.emplace_back(line.substr(0, space), line.substr(space + 1));
    }
    if (static_cast<int>(merges.size()) < kNumMerges) {
        return Status::Error("only " + std::to_string(merges.size()) +
                             " merges, CLIP needs the first " + std::to_string(kNumMerges) +
                             ": the list is truncated or not CLIP's");
    }
    return merges;
}

Result<ClipTokenizer> ClipTokenizer::build(MergeList merges,
                                           const std::unordered_map<std::string, int>* vocab) {
    ClipTokenizer tok;
    const auto byte_pairs = bytes_to_unicode();
    for (const auto& [byte, cp] : byte_pairs) {
        std::string s;
        unicode::append_utf8(s, cp);
        tok.byte_encoder_[static_cast<size_t>(byte)] = s;
        tok.byte_decoder_[cp] = static_cast<unsigned char>(byte);
    }

    bool has_word_end = false;
    for (const auto& m : merges) {
        if (ends_with(m.second, kEndOfWord)) {
            has_word_end = true;
            break;
        }
    }
    if (!has_word_end) {
        return Status::Error("no merge ends a word with </w>: not a CLIP merge list");
    }

    if (vocab == nullptr) {
        std::vector<std::string> list;
        list.reserve(kVocabSize);
        for (const auto& [byte, cp] : byte_pairs) list.push_back(tok.byte_encoder_[byte]);
        for (const auto& [byte, cp] : byte_pairs)
            list.push_back(tok.byte_encoder_[byte] + kEndOfWord);
        tok.encoder_.reserve(kVocabSize);
        for (size_t i = 0; i < list.size(); ++i) tok.encoder_[list[i]] = static_cast<int>(i);
        for (size_t i = 0; i < merges.size(); ++i) {
            const auto& [a, b] = merges[i];
            if (!tok.encoder_.count(a) || !tok.encoder_.count(b)) {
                return Status::Error("merge " + std::to_string(i + 1) + " ('" + a + " " + b +
                                     "') uses a symbol no earlier merge made: corrupt merge list");
            }
            list.push_back(a + b);
            tok.encoder_[list.back()] = static_cast<int>(list.size() - 1);
        }
        list.emplace_back(kStartOfText);
        tok.encoder_[list.back()] = static_cast<int>(list.size() - 1);
        list.emplace_back(kEndOfText);
        tok.encoder_[list.back()] = static_cast<int>(list.size() - 1);
        tok.decoder_ = std::move(list);
    } else {
        tok.encoder_ = *vocab;
        int max_id = -1;
        for (const auto& [token, id] : *vocab) max_id = std::max(max_id, id);
        tok.decoder_.assign(static_cast<size_t>(max_id + 1), std::string());
        for (const auto& [token, id] : *vocab) tok.decoder_[static_cast<size_t>(id)] = token;
        // Every byte symbol must be present, or some text could not be encoded.
        for (const auto& [byte, cp] : byte_pairs) {
            const std::string& s = tok.byte_encoder_[static_cast<size_t>(byte)];
            if (!tok.encoder_.count(s) || !tok.encoder_.count(s + kEndOfWord)) {
                return Status::Error("vocabulary lacks byte symbol '" + s +
                                     "': not a CLIP vocabulary");
            }
        }
    }

    auto bos = tok.encoder_.find(kStartOfText);
    auto eos = tok.encoder_.find(kEndOfText);
    if (bos == tok.encoder_.end() || eos == tok.encoder_.end()) {
        return Status::Error("vocabulary lacks <|startoftext|> or <|endoftext|>");
    }
    tok.bos_ = bos->second;
    tok.eos_ = eos->second;

    tok.ranks_.reserve(merges.size());
    for (size_t i = 0; i < merges.size(); ++i) {
        // The first occurrence wins, like min() over ranks in CLIP's bpe().
        tok.ranks_.emplace(merges[i].first + " " + merges[i].second, static_cast<int>(i));
    }
    GGDIFF_LOG_DEBUG("CLIP tokenizer: %zu merges, vocabulary of %zu", merges.size(),
                     tok.decoder_.size());
    return tok;
}

Result<ClipTokenizer> ClipTokenizer::from_merges_text(const std::string& merges_text) {
    auto merges = parse_merges(merges_text, /*expect_header=*/true);
    if (!merges) return merges.status().with_context("CLIP merge list");
    auto tok = build(std::move(*merges), nullptr);
    if (!tok) return tok.status().with_context("CLIP merge list");
    return tok;
}

Result<ClipTokenizer> ClipTokenizer::from_merges_file(const std::string& path) {
    auto text = read_tokenizer_text(path);
    if (!text) return text.status().with_context("reading CLIP merges");
    auto merges = parse_merges(*text, /*expect_header=*/true);
    if (!merges) return merges.status().with_context("CLIP merges " + path);
    auto tok = build(std::move(*merges), nullptr);
    if (!tok) return tok.status().with_context("CLIP merges " + path);
    return tok;
}

Result<ClipTokenizer> ClipTokenizer::from_vocab_and_merges(const std::string& vocab_json_path,
                                                           const std::string& merges_path) {
    auto j = read_tokenizer_json(vocab_json_path);
    if (!j) return j.status().with_context("reading CLIP vocabulary");
    auto vocab = vocab_from_json(*j, vocab_json_path);
    if (!vocab) return vocab.status();
    auto text = read_tokenizer_text(merges_path);
    if (!text) return text.status().with_context("reading CLIP merges");
    auto merges = parse_merges(*text, /*expect_header=*/true);
    if (!merges) return merges.status().with_context("CLIP merges " + merges_path);
    auto tok = build(std::move(*merges), &*vocab);
    if (!tok) return tok.status().with_context("CLIP tokenizer " + vocab_json_path);
    return tok;
}

Result<ClipTokenizer> ClipTokenizer::from_tokenizer_json(const std::string& path) {
    auto j = read_tokenizer_json(path);
    if (!j) return j.status().with_context("reading CLIP tokenizer");
    const std::string what = "CLIP tokenizer " + path;
    if (!j->is_object() || !j->contains("model") || !(*j)["model"].is_object()) {
        return Status::Error(what + ": no \"model\" object (not a tokenizer.json)");
    }
    const auto& model = (*j)["model"];
    if (model.contains("type") && model["type"] != "BPE") {
        return Status::Error(what + ": model type is not BPE");
    }
    if (!model.contains("vocab") || !model.contains("merges") || !model["merges"].is_array()) {
        return Status::Error(what + ": model lacks vocab or merges");
    }
    auto vocab = vocab_from_json(model["vocab"], what + " model.vocab");
    if (!vocab) return vocab.status();
    // Merges are "a b" strings (older files) or ["a", "b"] pairs (newer); no header line.
    std::string merges_text;
    for (const auto& m : model["merges"]) {
        if (m.is_string()) {
            merges_text += m.get<std::string>();
        } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
            merges_text += m[0].get<std::string>() + " " + m[1].get<std::string>();
        } else {
            return Status::Error(what + ": a merge is neither \"a b\" nor [\"a\", \"b\"]");
        }
        merges_text += '\n';
    }
    auto merges = parse_merges(merges_text, /*expect_header=*/false);
    if (!merges) return merges.status().with_context(what);
    auto tok = build(std::move(*merges), &*vocab);
    if (!tok) return tok.status().with_context(what);
    return tok;
}

Result<ClipTokenizer> ClipTokenizer::from_path(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path p(path);
    if (fs::is_directory(p, ec)) {
        const fs::path merges = p / "merges.txt";
        const fs::path vocab = p / "vocab.json";
        const fs::path tokenizer_json = p / "tokenizer.json";
        if (fs::is_regular_file(merges, ec)) {
            if (fs::is_regular_file(vocab, ec)) {
                return from_vocab_and_merges(vocab.string(), merges.string());
            }
            return from_merges_file(merges.string());
        }
        if (fs::is_regular_file(tokenizer_json, ec))
            return from_tokenizer_json(tokenizer_json.string());
        return Status::Error("CLIP tokenizer folder " + path +
                             " holds neither merges.txt nor tokenizer.json");
    }
    if (!fs::exists(p, ec)) return Status::Error("CLIP tokenizer " + path + ": no such file");
    if (p.extension() == ".json") {
        if (p.filename() == "vocab.json") {
            const fs::path merges = p.parent_path() / "merges.txt";
            if (!fs::is_regular_file(merges, ec)) {
                return Status::Error("CLIP vocabulary " + path + " has no merges.txt next to it");
            }
            return from_vocab_and_merges(path, merges.string());
        }
        return from_tokenizer_json(path);
    }
    return from_merges_file(path);
}

// ---------------------------------------------------------------------------------------------
// Encoding

std::string ClipTokenizer::normalize(const std::string& text) {
    const std::u32string in = unicode::decode_utf8(text);
    std::u32string cleaned;
    cleaned.reserve(in.size());
    bool pending_space = false;
    for (char32_t cp : in) {
        if (unicode::is_space(cp)) {
            pending_space = !cleaned.empty();
            continue;
        }
        if (pending_space) cleaned.push_back(U' ');
        pending_space = false;
        cleaned.push_back(cp);
    }
    return unicode::encode_utf8(unicode::to_lower(cleaned));
}

std::vector<std::string> ClipTokenizer::pre_tokenize(const std::string& text) {
    using unicode::is_letter;
    using unicode::is_number;
    static const char* const kContractions[] = {"'s", "'t", "'re", "'ve", "'m", "'ll", "'d"};

    const std::u32string s = unicode::decode_utf8(text);
    std::vector<std::string> pieces;
    size_t i = 0;
    const size_t n = s.size();
    while (i < n) {
        size_t len = 0;
        if (starts_with_at(s, i, kStartOfText)) {
            len = sizeof(kStartOfText) - 1;
        } else if (starts_with_at(s, i, kEndOfText)) {
            len = sizeof(kEndOfText) - 1;
        } else {
            for (const char* c : kContractions) {
                if (starts_with_at(s, i, c)) {
                    len = std::char_traits<char>::length(c);
                    break;
                }
            }
        }
        if (len == 0) {
            const char32_t c = s[i];
            if (is_letter(c)) {
                len = 1;
                while (i + len < n && is_letter(s[i + len])) ++len;
            } else if (is_number(c)) {
                len = 1;
            } else if (is_other(c)) {
                len = 1;
                while (i + len < n && is_other(s[i + len])) ++len;
            }
        }
        if (len == 0) {  // whitespace (or U+0345) between pieces
            ++i;
            continue;
        }
        pieces.push_back(unicode::encode_utf8(std::u32string_view(s).substr(i, len)));
        i += len;
    }
    return pieces;
}

// Merges the lowest-ranked adjacent pair first, the leftmost of equal ones, until none is in
// the merge list: what CLIP's loop of "find the best pair, merge all its occurrences" does, in
// O(n log n) with a heap over a linked list instead of O(n^2) rescans (a merge only creates
// pairs that contain its result, which rank after it in a merge list).
std::vector<std::string> ClipTokenizer::bpe(const std::string& piece) const {
    std::vector<std::string> sym;
    sym.reserve(piece.size());
    for (unsigned char b : piece) sym.push_back(byte_encoder_[b]);
    if (sym.empty()) return sym;
    sym.back() += kEndOfWord;
    const size_t n = sym.size();
    if (n == 1) return sym;

    constexpr size_t kNone = static_cast<size_t>(-1);
    std::vector<size_t> prev(n), next(n);
    for (size_t i = 0; i < n; ++i) {
        prev[i] = i == 0 ? kNone : i - 1;
        next[i] = i + 1 < n ? i + 1 : kNone;
    }
    std::vector<bool> alive(n, true);
    std::string key;
    auto rank_at = [&](size_t left) {
        const size_t right = next[left];
        if (right == kNone) return INT_MAX;
        key.assign(sym[left]).append(" ").append(sym[right]);
        const auto it = ranks_.find(key);
        return it == ranks_.end() ? INT_MAX : it->second;
    };
    using Entry = std::pair<int, size_t>;  // rank, position of the pair's left symbol
    std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap;
    auto push = [&](size_t left) {
        const int rank = rank_at(left);
        if (rank != INT_MAX) heap.emplace(rank, left);
    };
    for (size_t i = 0; i + 1 < n; ++i) push(i);
    while (!heap.empty()) {
        const auto [rank, left] = heap.top();
        heap.pop();
        if (!alive[left] || rank_at(left) != rank) continue;  // stale entry
        const size_t right = next[left];
        sym[left] += sym[right];
        sym[right].clear();
        alive[right] = false;
        next[left] = next[right];
        if (next[right] != kNone) prev[next[right]] = left;
        if (prev[left] != kNone) push(prev[left]);
        push(left);
    }
    std::vector<std::string> word;
    for (size_t i = 0; i != kNone; i = next[i]) word.push_back(std::move(sym[i]));
    return word;
}

std::vector<ClipTokenizer::Piece> ClipTokenizer::split_special(
    const std::string& normalized, const std::vector<std::string>& words) {
    std::vector<Piece> pieces;
    size_t pos = 0;
    while (pos < normalized.size()) {
        size_t best = std::string::npos;
        int which = -1;
        for (size_t k = 0; k < words.size(); ++k) {
            if (words[k].empty()) continue;
            const size_t at = normalized.find(words[k], pos);
            if (at < best) {
                best = at;
                which = static_cast<int>(k);
            }
        }
        if (which < 0) {
            pieces.push_back({normalized.substr(pos), -1});
            break;
        }
        if (best > pos) pieces.push_back({normalized.substr(pos, best - pos), -1});
        pieces.push_back({words[static_cast<size_t>(which)], which});
        pos = best + words[static_cast<size_t>(which)].size();
    }
    return pieces;
}

std::vector<int> ClipTokenizer::encode(const std::string& text,
                                       const ClipSpecialWords* special) const {
    std::vector<int> ids;
    const std::string normalized = normalize(text);
    std::vector<Piece> parts;
    if (special && !special->words.empty()) {
        parts = split_special(normalized, special->words);
    } else {
        parts.push_back({normalized, -1});
    }
    for (const Piece& part : parts) {
        if (part.word >= 0) {
            const std::vector<int>& w = special->ids[static_cast<size_t>(part.word)];
            ids.insert(ids.end(), w.begin(), w.end());
            continue;
        }
        for (const std::string& piece : pre_tokenize(part.text)) {
            if (piece == kStartOfText) {
                ids.push_back(bos_);
                continue;
            }
            if (piece == kEndOfText) {
                ids.push_back(eos_);
                continue;
            }
            for (const std::string& sym : bpe(piece)) {
                auto it = encoder_.find(sym);
                // Cannot miss with a vocabulary built from the merges; a foreign vocab.json
                // could.
                ids.push_back(it != encoder_.end() ? it->second : eos_);
            }
        }
    }
    return ids;
}

std::string ClipTokenizer::decode(const std::vector<int>& ids) const {
    std::string bytes;
    for (int id : ids) {
        if (id == bos_ || id == eos_ || id < 0 || id >= static_cast<int>(decoder_.size())) continue;
        std::string token = decoder_[static_cast<size_t>(id)];
        const bool word_end = ends_with(token, kEndOfWord);
        if (word_end) token.resize(token.size() - (sizeof(kEndOfWord) - 1));
        for (char32_t cp : unicode::decode_utf8(token)) {
            auto it = byte_decoder_.find(cp);
            if (it != byte_decoder_.end()) {
                bytes.push_back(static_cast<char>(it->second));
            } else {
                unicode::append_utf8(bytes, cp);
            }
        }
        if (word_end) bytes.push_back(' ');
    }
    // Tokens may split a character; invalid bytes become U+FFFD (errors="replace").
    std::string text = unicode::encode_utf8(unicode::decode_utf8(bytes));
    const size_t first = text.find_first_not_of(' ');
    if (first == std::string::npos) return "";
    const size_t last = text.find_last_not_of(' ');
    return text.substr(first, last - first + 1);
}

int ClipTokenizer::token_to_id(const std::string& token) const {
    auto it = encoder_.find(token);
    return it == encoder_.end() ? -1 : it->second;
}

const std::string& ClipTokenizer::id_to_token(int id) const {
    static const std::string kEmpty;
    if (id < 0 || id >= static_cast<int>(decoder_.size())) return kEmpty;
    return decoder_[static_cast<size_t>(id)];
}

}  // namespace ggdiff
