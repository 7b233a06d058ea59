#include "tokenizers/prompt_attention.h"

#include <cctype>
#include <locale>
#include <sstream>

#include "tokenizers/unicode.h"

namespace ggdiff {

namespace {

struct Run {
    std::string text;
    float weight;
    bool is_break;
};

bool is_ascii_space(char c) {
    return c == ' ' || (c >= '\t' && c <= '\r');
}

// Parses A1111's [+-]?[.\d]+ weight text; like float() in Python but accepting a valid prefix
// ("1.2.3" -> 1.2, as std::stof in stable-diffusion.cpp). Without any number it returns 1.
float parse_weight(const std::string& s) {
    std::istringstream in(s);
    in.imbue(std::locale::classic());
    float w = 1.0f;
    if (!(in >> w)) return 1.0f;
    return w;
}

// Tries A1111's  :\s*([+-]?[.\d]+)\s*\)  at text[pos] == ':'. On success sets `len` and `weight`.
bool match_weight_close(const std::string& text, size_t pos, size_t& len, std::string& weight) {
    size_t i = pos + 1;
    while (i < text.size() && is_ascii_space(text[i])) ++i;
    const size_t num_start = i;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
    const size_t digits_start = i;
    while (i < text.size() &&
           (text[i] == '.' || std::isdigit(static_cast<unsigned char>(text[i])))) {
        ++i;
    }
    if (i == digits_start) return false;
    const size_t num_end = i;
    while (i < text.size() && is_ascii_space(text[i])) ++i;
    if (i >= text.size() || text[i] != ')') return false;
    len = i + 1 - pos;
    weight = text.substr(num_start, num_end - num_start);
    return true;
}

// A1111 splits plain text on  \s*\bBREAK\b\s*  (Python re: Unicode \s and \w).
void append_text_with_breaks(const std::string& text, std::vector<Run>& res) {
    const std::u32string s = unicode::decode_utf8(text);
    const std::u32string kBreak = U"BREAK";
    size_t part_start = 0;  // start of the current part (code point index)
    size_t search = 0;
    while (true) {
        size_t q = s.find(kBreak, search);
        if (q == std::u32string::npos) break;
        const bool left_ok = q == 0 || !unicode::is_word_char(s[q - 1]);
        const size_t after = q + kBreak.size();
        const bool right_ok = after >= s.size() || !unicode::is_word_char(s[after]);
        if (!left_ok || !right_ok) {
            search = q + 1;
            continue;
        }
        size_t match_start = q;
        while (match_start > part_start && unicode::is_space(s[match_start - 1])) --match_start;
        size_t match_end = after;
        while (match_end < s.size() && unicode::is_space(s[match_end])) ++match_end;
        res.push_back(
            {unicode::encode_utf8(s.substr(part_start, match_start - part_start)), 1.0f, false});
        res.push_back({"BREAK", kBreakWeight, true});
        part_start = match_end;
        search = match_end;
    }
    res.push_back({unicode::encode_utf8(s.substr(part_start)), 1.0f, false});
}

}  // namespace

std::vector<std::pair<std::string, float>> parse_prompt_attention(const std::string& text) {
    const float round_mult = 1.1f;
    const float square_mult = 1 / 1.1f;
    std::vector<Run> res;
    std::vector<size_t> round_brackets;
    std::vector<size_t> square_brackets;

    auto multiply_range = [&](size_t start, float mult) {
        for (size_t p = start; p < res.size(); ++p) {
            if (!res[p].is_break) res[p].weight *= mult;
        }
    };

    size_t pos = 0;
    while (pos < text.size()) {
        const char c = text[pos];
        if (c == '\\') {
            // \( \) \[ \] \\ are literals; a lone backslash is dropped (A1111 appends text[1:]).
            const bool escape = pos + 1 < text.size() &&
                                std::string("()[]\\").find(text[pos + 1]) != std::string::npos;
            if (escape) {
                res.push_back({std::string(1, text[pos + 1]), 1.0f, false});
                pos += 2;
            } else {
                res.push_back({"", 1.0f, false});
                pos += 1;
            }
        } else if (c == '(') {
            round_brackets.push_back(res.size());
            ++pos;
        } else if (c == '[') {
            square_brackets.push_back(res.size());
            ++pos;
        } else if (c == ':') {
            size_t len = 0;
            std::string weight;
            if (match_weight_close(text, pos, len, weight) && !round_brackets.empty()) {
                multiply_range(round_brackets.back(), parse_weight(weight));
                round_brackets.pop_back();
            } else if (len > 0) {
                // ":1.3)" without an open bracket stays text.
                append_text_with_breaks(text.substr(pos, len), res);
            } else {
                len = 1;
                res.push_back({":", 1.0f, false});
            }
            pos += len;
        } else if (c == ')' && !round_brackets.empty()) {
            multiply_range(round_brackets.back(), round_mult);
            round_brackets.pop_back();
            ++pos;
        } else if (c == ']' && !square_brackets.empty()) {
            multiply_range(square_brackets.back(), square_mult);
            square_brackets.pop_back();
            ++pos;
        } else if (c == ')' || c == ']') {
            append_text_with_breaks(std::string(1, c), res);
            ++pos;
        } else {
            size_t end = pos;
            while (end < text.size() &&
                   std::string("\\()[]:").find(text[end]) == std::string::npos) {
                ++end;
            }
            append_text_with_breaks(text.substr(pos, end - pos), res);
            pos = end;
        }
    }

    for (size_t p : round_brackets) multiply_range(p, round_mult);
    for (size_t p : square_brackets) multiply_range(p, square_mult);

    if (res.empty()) res.push_back({"", 1.0f, false});

    // Merge runs of identical weight (never across a BREAK).
    std::vector<std::pair<std::string, float>> out;
    std::vector<bool> out_break;
    for (const Run& r : res) {
        if (!out.empty() && !r.is_break && !out_break.back() && out.back().second == r.weight) {
            out.back().first += r.text;
        } else {
            out.emplace_back(r.text, r.weight);
            out_break.push_back(r.is_break);
        }
    }
    return out;
}

namespace {

// Bytes of the UTF-8 character that starts with `lead` (1 for a stray continuation byte), never
// past `left`.
size_t utf8_length(unsigned char lead, size_t left) {
    size_t n = 1;
    if ((lead & 0xE0) == 0xC0) {
        n = 2;
    } else if ((lead & 0xF0) == 0xE0) {
        n = 3;
    } else if ((lead & 0xF8) == 0xF0) {
        n = 4;
    }
    return n <= left ? n : 1;
}

bool ascii_letter(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

bool at(const std::string& s, size_t pos, const std::string& mark) {
    return pos + mark.size() <= s.size() && s.compare(pos, mark.size(), mark) == 0;
}

// An apostrophe inside a word: "don't".
bool in_word(const std::string& s, size_t pos) {
    return pos > 0 && pos + 1 < s.size() && ascii_letter(s[pos - 1]) && ascii_letter(s[pos + 1]);
}

// The end of the quoted span opened at `pos` by `open` (past its closing mark), or npos.
size_t quoted_span_end(const std::string& s, size_t pos, const std::string& open,
                       const std::string& close) {
    size_t i = pos + open.size();
    while (i < s.size()) {
        if (open != close && at(s, i, open)) return std::string::npos;  // reopened first
        if (at(s, i, close)) {
            if (!(close == "'" && in_word(s, i))) return i + close.size();
            i += close.size();
            continue;
        }
        i += utf8_length(static_cast<unsigned char>(s[i]), s.size() - i);
    }
    return std::string::npos;
}

}  // namespace

std::vector<std::pair<std::string, float>> spell_quoted_spans(
    const std::vector<std::pair<std::string, float>>& runs) {
    static const std::pair<std::string, std::string> kMarks[] = {{"'", "'"},
                                                                 {"\"", "\""},
                                                                 {"\xE2\x80\x98", "\xE2\x80\x99"},
                                                                 {"\xE2\x80\x9C", "\xE2\x80\x9D"}};
    std::vector<std::pair<std::string, float>> out;
    for (const auto& [text, weight] : runs) {
        if (is_break_marker({text, weight})) {
            out.emplace_back(text, weight);
            continue;
        }
        size_t plain = 0;  // start of the text not yet emitted
        size_t i = 0;
        while (i < text.size()) {
            size_t end = std::string::npos;
            for (const auto& [open, close] : kMarks) {
                if (!at(text, i, open) || (open == "'" && in_word(text, i))) continue;
                end = quoted_span_end(text, i, open, close);
                if (end != std::string::npos) break;
            }
            if (end == std::string::npos) {
                i += utf8_length(static_cast<unsigned char>(text[i]), text.size() - i);
                continue;
            }
            if (i > plain) out.emplace_back(text.substr(plain, i - plain), weight);
            while (i < end) {
                const size_t n = utf8_length(static_cast<unsigned char>(text[i]), end - i);
                out.emplace_back(text.substr(i, n), weight);
                i += n;
            }
            plain = i;
        }
        if (text.size() > plain || text.empty()) out.emplace_back(text.substr(plain), weight);
    }
    return out;
}

}  // namespace ggdiff
