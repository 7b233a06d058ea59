#include "tokenizers/unicode.h"

#include <algorithm>

#include "tokenizers/unicode_tables.h"

namespace ggdiff::unicode {

namespace {

constexpr char32_t kReplacement = 0xFFFD;

bool in_ranges(const unicode_tables::CodeRange* ranges, size_t count, char32_t cp) {
    const auto* end = ranges + count;
    // First range whose last >= cp.
    const auto* it = std::lower_bound(
        ranges, end, cp, [](const unicode_tables::CodeRange& r, char32_t c) { return r.last < c; });
    return it != end && it->first <= cp;
}

char32_t lower_simple(char32_t cp) {
    if (cp < 0x80) return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
    const auto* begin = unicode_tables::kLower;
    const auto* end = begin + unicode_tables::kLower_count;
    const auto* it = std::lower_bound(
        begin, end, cp, [](const unicode_tables::LowerRun& r, char32_t c) { return r.last < c; });
    if (it == end || it->first > cp) return cp;
    if ((cp - it->first) % static_cast<char32_t>(it->stride) != 0) return cp;
    return static_cast<char32_t>(static_cast<long>(cp) + it->delta);
}

}  // namespace

std::u32string decode_utf8(std::string_view text) {
    std::u32string out;
    out.reserve(text.size());
    size_t i = 0;
    const size_t n = text.size();
    while (i < n) {
        const auto b0 = static_cast<unsigned char>(text[i]);
        if (b0 < 0x80) {
            out.push_back(b0);
            ++i;
            continue;
        }
        int len = 0;
        char32_t cp = 0;
        char32_t min_cp = 0;
        if ((b0 & 0xE0) == 0xC0) {
            len = 2, cp = b0 & 0x1F, min_cp = 0x80;
        } else if ((b0 & 0xF0) == 0xE0) {
            len = 3, cp = b0 & 0x0F, min_cp = 0x800;
        } else if ((b0 & 0xF8) == 0xF0) {
            len = 4, cp = b0 & 0x07, min_cp = 0x10000;
        }
        bool ok = len > 0 && i + static_cast<size_t>(len) <= n;
        for (int k = 1; ok && k < len; ++k) {
            const auto b = static_cast<unsigned char>(text[i + static_cast<size_t>(k)]);
            if ((b & 0xC0) != 0x80) {
                ok = false;
            } else {
                cp = (cp << 6) | (b & 0x3F);
            }
        }
        if (ok && (cp < min_cp || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))) ok = false;
        if (ok) {
            out.push_back(cp);
            i += static_cast<size_t>(len);
        } else {
            out.push_back(kReplacement);
            ++i;
        }
    }
    return out;
}

void append_utf8(std::string& out, char32_t cp) {
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
}

std::string encode_utf8(std::u32string_view text) {
    std::string out;
    out.reserve(text.size());
    for (char32_t cp : text) append_utf8(out, cp);
    return out;
}

bool is_letter(char32_t cp) {
    if (cp < 0x80) return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z');
    return in_ranges(unicode_tables::kLetters, unicode_tables::kLetters_count, cp);
}

bool is_number(char32_t cp) {
    if (cp < 0x80) return cp >= '0' && cp <= '9';
    return in_ranges(unicode_tables::kNumbers, unicode_tables::kNumbers_count, cp);
}

bool is_space(char32_t cp) {
    if (cp < 0x80) return cp == ' ' || (cp >= 0x09 && cp <= 0x0D);
    return in_ranges(unicode_tables::kSpaces, unicode_tables::kSpaces_count, cp);
}

bool is_lowercase(char32_t cp) {
    if (cp < 0x80) return cp >= 'a' && cp <= 'z';
    return in_ranges(unicode_tables::kLowercase, unicode_tables::kLowercase_count, cp);
}

bool is_upper_title(char32_t cp) {
    if (cp < 0x80) return cp >= 'A' && cp <= 'Z';
    return in_ranges(unicode_tables::kUpperTitle, unicode_tables::kUpperTitle_count, cp);
}

bool is_mark(char32_t cp) {
    if (cp < 0x80) return false;
    return in_ranges(unicode_tables::kMarks, unicode_tables::kMarks_count, cp);
}

bool is_word_char(char32_t cp) {
    return cp == '_' || is_letter(cp) || is_number(cp);
}

std::u32string to_lower(std::u32string_view text) {
    std::u32string out;
    out.reserve(text.size());
    for (char32_t cp : text) {
        if (cp == 0x130) {  // LATIN CAPITAL LETTER I WITH DOT ABOVE: the one multi-char mapping
            out.push_back(U'i');
            out.push_back(0x307);
        } else {
            out.push_back(lower_simple(cp));
        }
    }
    return out;
}

}  // namespace ggdiff::unicode
