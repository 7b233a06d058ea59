#include "tokenizers/byte_level_bpe.h"

#include <climits>

#include "tokenizers/unicode.h"

namespace ggdiff::byte_level {

std::array<char32_t, 256> byte_code_points() {
    std::array<char32_t, 256> cp{};
    int extra = 0;
    for (int b = 0; b < 256; ++b) {
        const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
        cp[b] = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + extra++);
    }
    return cp;
}

std::array<std::string, 256> byte_symbols() {
    const std::array<char32_t, 256> cps = byte_code_points();
    std::array<std::string, 256> out;
    for (int b = 0; b < 256; ++b) unicode::append_utf8(out[b], cps[b]);
    return out;
}

size_t match_whitespace(const std::u32string& s, size_t i) {
    const size_t n = s.size();
    size_t end = i;
    while (end < n && unicode::is_space(s[end])) ++end;
    if (end == i) return 0;
    auto newline = [](char32_t c) { return c == U'\r' || c == U'\n'; };
    // \s*[\r\n]+ : up to the end of the newline run holding the run's last newline.
    for (size_t k = end; k > i; --k) {
        if (newline(s[k - 1])) {
            size_t m = k;
            while (m < end && newline(s[m])) ++m;
            return m - i;
        }
    }
    // \s+(?!\S): the whole run at the end of the text, else all but its last character.
    if (end == n) return end - i;
    if (end - i >= 2) return end - 1 - i;
    // \s+
    return end - i;
}

std::vector<std::string> merge(std::vector<std::string> word, const PairRank& rank) {
    while (word.size() > 1) {
        int best_rank = INT_MAX;
        size_t best = 0;
        for (size_t i = 0; i + 1 < word.size(); ++i) {
            const int r = rank(word[i], word[i + 1]);
            if (r >= 0 && r < best_rank) {
                best_rank = r;
                best = i;
            }
        }
        if (best_rank == INT_MAX) break;
        const std::string first = word[best], second = word[best + 1];
        std::vector<std::string> merged;
        merged.reserve(word.size());
        for (size_t i = 0; i < word.size();) {
            if (i + 1 < word.size() && word[i] == first && word[i + 1] == second) {
                merged.push_back(first + second);
                i += 2;
            } else {
                merged.push_back(word[i]);
                ++i;
            }
        }
        word = std::move(merged);
    }
    return word;
}

std::vector<int> encode_with_specials(
    const std::string& text, const std::vector<std::pair<std::string, int>>& specials,
    const std::function<bool(unsigned char)>& may_start,
    const std::function<std::vector<int>(const std::string&)>& plain) {
    std::vector<int> ids;
    auto add_plain = [&](size_t from, size_t to) {
        if (to <= from) return;
        const std::vector<int> part = plain(text.substr(from, to - from));
        ids.insert(ids.end(), part.begin(), part.end());
    };
    size_t start = 0, pos = 0;
    while (pos < text.size()) {
        const std::pair<std::string, int>* hit = nullptr;
        if (may_start(static_cast<unsigned char>(text[pos]))) {
            for (const auto& s : specials) {
                if (text.compare(pos, s.first.size(), s.first) == 0) {
                    hit = &s;
                    break;
                }
            }
        }
        if (!hit) {
            ++pos;
            continue;
        }
        add_plain(start, pos);
        ids.push_back(hit->second);
        pos += hit->first.size();
        start = pos;
    }
    add_plain(start, text.size());
    return ids;
}

}  // namespace ggdiff::byte_level
