#include "tokenizers/unigram_tokenizer.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/read_file.h"
#include "tokenizers/tokenizer_files.h"

namespace ggdiff {
namespace {

constexpr float kUnkPenalty = 10.0f;

size_t utf8_len(unsigned char c) {
    if (c < 0x80) return 1;
    if ((c >> 5) == 0x6) return 2;
    if ((c >> 4) == 0xE) return 3;
    if ((c >> 3) == 0x1E) return 4;
    return 1;  // stray continuation byte: one byte on its own
}

bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// The first Metaspace pre-tokenizer, at the top or inside a Sequence.
const nlohmann::json* find_metaspace(const nlohmann::json& pt) {
    if (!pt.is_object()) return nullptr;
    if (pt.value("type", "") == "Metaspace") return &pt;
    if (pt.contains("pretokenizers") && pt["pretokenizers"].is_array()) {
        for (const auto& p : pt["pretokenizers"]) {
            if (const nlohmann::json* m = find_metaspace(p)) return m;
        }
    }
    return nullptr;
}

}  // namespace

Result<UnigramTokenizer> UnigramTokenizer::from_json_text(const std::string& text,
                                                          const std::string& source) {
    Status depth = check_json_nesting(text, kMaxTokenizerJsonDepth);
    if (!depth.ok()) return Status::Error(source + ": " + depth.message());
    nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
        return Status::Error(source + ": not a tokenizer.json (invalid JSON)");
    }
    if (!j.contains("model") || !j["model"].is_object()) {
        return Status::Error(source + ": not a tokenizer.json (no \"model\")");
    }
    const nlohmann::json& m = j["model"];
    const std::string type = m.value("type", "");
    if (type != "Unigram") {
        return Status::Error(source + ": a " + (type.empty() ? "untyped" : type) +
                             " tokenizer; T5 needs a Unigram (SentencePiece) tokenizer.json");
    }
    if (!m.contains("vocab") || !m["vocab"].is_array() || m["vocab"].empty()) {
        return Status::Error(source + ": Unigram model without a vocabulary");
    }
    UnigramTokenizer t;
    float min_score = std::numeric_limits<float>::max();
    for (const auto& item : m["vocab"]) {
        if (!item.is_array() || item.size() != 2 || !item[0].is_string() || !item[1].is_number()) {
            return Status::Error(source + ": vocabulary entry " + std::to_string(t.pieces_.size()) +
                                 " is not [piece, score]");
        }
        const std::string piece = item[0].get<std::string>();
        const float score = item[1].get<float>();
        const int id = static_cast<int>(t.pieces_.size());
        t.pieces_.push_back(piece);
        t.scores_.push_back(score);
        if (!piece.empty()) t.ids_.emplace(piece, id);  // first one wins
        t.max_piece_bytes_ = std::max(t.max_piece_bytes_, piece.size());
        min_score = std::min(min_score, score);
    }
    t.unk_score_ = min_score - kUnkPenalty;
    if (m.contains("unk_id") && m["unk_id"].is_number_integer()) t.unk_id_ = m["unk_id"];
    auto id_of = [&](const char* piece, int fallback) {
        auto it = t.ids_.find(piece);
        return it == t.ids_.end() ? fallback : it->second;
    };
    t.eos_id_ = id_of("</s>", 1);
    t.pad_id_ = id_of("<pad>", 0);
    const int n = static_cast<int>(t.pieces_.size());
    if (t.unk_id_ < 0 || t.unk_id_ >= n || t.eos_id_ >= n || t.pad_id_ >= n) {
        return Status::Error(source + ": special token ids outside the vocabulary");
    }
    if (j.contains("pre_tokenizer")) {
        if (const nlohmann::json* ms = find_metaspace(j["pre_tokenizer"])) {
            t.replacement_ = ms->value("replacement", t.replacement_);
            const std::string scheme = ms->value("prepend_scheme", "");
            if (scheme == "never" || (scheme.empty() && !ms->value("add_prefix_space", true))) {
                t.prepend_ = Prepend::Never;
            } else if (scheme == "first") {
                t.prepend_ = Prepend::First;
            }
        }
    }
    return t;
}

Result<UnigramTokenizer> UnigramTokenizer::from_file(const std::string& path) {
    // Bounded like every tokenizer file (a FIFO or /dev/zero stops at the limit).
    auto text = read_tokenizer_text(path);
    if (!text.ok()) return text.status();
    return from_json_text(*text, path);
}

void UnigramTokenizer::encode_word(const std::string& word, std::vector<int>& out) const {
    struct Best {
        float score = 0.0f;
        int start = -1;  // -1: not reached
        int id = -1;
    };
    const size_t n = word.size();
    std::vector<Best> best(n + 1);
    best[0].start = 0;
    for (size_t start = 0; start < n;) {
        const size_t ch = std::min(utf8_len(static_cast<unsigned char>(word[start])), n - start);
        if (best[start].start < 0) {
            start += ch;
            continue;
        }
        const float base = best[start].score;
        bool single = false;
        // Every piece that starts here, shortest first; a tie keeps the earlier one.
        for (size_t len = ch; start + len <= n && len <= max_piece_bytes_;) {
            auto it = ids_.find(word.substr(start, len));
            if (it != ids_.end()) {
                const float s = base + scores_[static_cast<size_t>(it->second)];
                Best& b = best[start + len];
                if (b.start < 0 || s > b.score) b = {s, static_cast<int>(start), it->second};
                if (len == ch) single = true;
            }
            if (start + len >= n) break;
            len += utf8_len(static_cast<unsigned char>(word[start + len]));
        }
        if (!single) {
            Best& b = best[start + ch];
            const float s = base + unk_score_;
            if (b.start < 0 || s > b.score) b = {s, static_cast<int>(start), unk_id_};
        }
        start += ch;
    }
    std::vector<int> ids;
    for (size_t end = n; end > 0;) {
        const Best& b = best[end];
        ids.push_back(b.id);
        end = static_cast<size_t>(b.start);
    }
    std::reverse(ids.begin(), ids.end());
    for (size_t k = 0; k < ids.size(); ++k) {
        if (k > 0 && ids[k] == unk_id_ && ids[k - 1] == unk_id_) continue;  // fuse unknowns
        out.push_back(ids[k]);
    }
}

std::vector<int> UnigramTokenizer::encode(const std::string& text) const {
    std::vector<int> out;
    bool first = true;
    // The reference engine's Metaspace step prepends the replacement to the text and turns
    // each space into another one, so a text that starts with a space (the segment " house"
    // of "a (red:1.4) house") starts with a lone replacement token.
    if (prepend_ == Prepend::Always && !text.empty() && text[0] == ' ' &&
        text.find_first_not_of(" \t\r\n") != std::string::npos) {
        encode_word(replacement_, out);
    }
    for (size_t i = 0; i < text.size();) {
        while (i < text.size() && is_space(text[i])) ++i;
        if (i >= text.size()) break;
        size_t j = i;
        while (j < text.size() && !is_space(text[j])) ++j;
        // Every word after the first had a space before it, which Metaspace turns into the
        // replacement; the first gets one when the scheme prepends.
        const bool prefix = !first || prepend_ != Prepend::Never;
        encode_word((prefix ? replacement_ : std::string()) + text.substr(i, j - i), out);
        first = false;
        i = j;
    }
    // A text without words is the replacement alone once the scheme prepends it, as the
    // reference engine's Metaspace step leaves it (an empty prompt is "\u2581" + EOS there).
    if (first && prepend_ != Prepend::Never) encode_word(replacement_, out);
    return out;
}

T5Chunks make_t5_chunks(const std::vector<int>& tokens, const std::vector<float>& weights, int eos,
                        int pad, int chunk_len) {
    T5Chunks c;
    const size_t body = static_cast<size_t>(std::max(2, chunk_len) - 1);
    size_t i = 0;
    do {
        const size_t take = std::min(body, tokens.size() - i);
        for (size_t k = 0; k < take; ++k) {
            c.tokens.push_back(tokens[i + k]);
            c.weights.push_back(i + k < weights.size() ? weights[i + k] : 1.0f);
        }
        i += take;
        c.tokens.push_back(eos);
        c.weights.push_back(1.0f);
        c.real.resize(c.tokens.size(), 1);
        ++c.n_chunks;
        c.tokens.resize(static_cast<size_t>(c.n_chunks) * static_cast<size_t>(chunk_len), pad);
        c.weights.resize(c.tokens.size(), 1.0f);
        c.real.resize(c.tokens.size(), 0);
    } while (i < tokens.size());
    return c;
}

}  // namespace ggdiff
