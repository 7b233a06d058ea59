#include "image/text_encoding.h"

namespace ggdiff {

namespace {

constexpr uint32_t kReplacement = 0xFFFD;

void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

// Decodes one code point at s[i]; advances i. Returns false (and advances by one) on an
// invalid, overlong or surrogate sequence.
bool next_code_point(const std::string& s, size_t& i, uint32_t& cp) {
    const auto b = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
    const uint8_t c = b(i);
    size_t len;
    uint32_t min;
    if (c < 0x80) {
        cp = c;
        ++i;
        return true;
    } else if ((c & 0xE0) == 0xC0) {
        len = 2, cp = c & 0x1F, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
        len = 3, cp = c & 0x0F, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
        len = 4, cp = c & 0x07, min = 0x10000;
    } else {
        ++i;
        return false;
    }
    if (i + len > s.size()) {
        ++i;
        return false;
    }
    for (size_t k = 1; k < len; ++k) {
        if ((b(i + k) & 0xC0) != 0x80) {
            ++i;
            return false;
        }
        cp = (cp << 6) | (b(i + k) & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
        ++i;
        return false;
    }
    i += len;
    return true;
}

}  // namespace

bool is_valid_utf8(const std::string& s) {
    size_t i = 0;
    uint32_t cp;
    while (i < s.size()) {
        if (!next_code_point(s, i, cp)) return false;
    }
    return true;
}

bool is_ascii(const std::string& s) {
    for (char c : s) {
        if (static_cast<uint8_t>(c) >= 0x80) return false;
    }
    return true;
}

std::string latin1_to_utf8(const std::string& s) {
    std::string out;
    out.reserve(s.size());
    for (char c : s) append_utf8(out, static_cast<uint8_t>(c));
    return out;
}

std::string bytes_to_utf8(const std::string& s) {
    return is_valid_utf8(s) ? s : latin1_to_utf8(s);
}

std::vector<uint8_t> utf8_to_utf16(const std::string& s, bool big_endian) {
    std::vector<uint8_t> out;
    out.reserve(s.size() * 2);
    const auto put = [&](uint32_t unit) {
        const uint8_t hi = static_cast<uint8_t>(unit >> 8), lo = static_cast<uint8_t>(unit);
        out.push_back(big_endian ? hi : lo);
        out.push_back(big_endian ? lo : hi);
    };
    size_t i = 0;
    while (i < s.size()) {
        uint32_t cp;
        if (!next_code_point(s, i, cp)) cp = kReplacement;
        if (cp >= 0x10000) {
            cp -= 0x10000;
            put(0xD800 + (cp >> 10));
            put(0xDC00 + (cp & 0x3FF));
        } else {
            put(cp);
        }
    }
    return out;
}

std::string utf16_to_utf8(const uint8_t* data, size_t size, bool big_endian) {
    std::string out;
    out.reserve(size / 2);
    const size_t n = size / 2;
    const auto unit = [&](size_t k) -> uint32_t {
        const uint8_t a = data[2 * k], b = data[2 * k + 1];
        return big_endian ? (uint32_t(a) << 8 | b) : (uint32_t(b) << 8 | a);
    };
    for (size_t k = 0; k < n; ++k) {
        uint32_t u = unit(k);
        if (u >= 0xD800 && u <= 0xDBFF && k + 1 < n) {
            const uint32_t v = unit(k + 1);
            if (v >= 0xDC00 && v <= 0xDFFF) {
                append_utf8(out, 0x10000 + ((u - 0xD800) << 10) + (v - 0xDC00));
                ++k;
                continue;
            }
        }
        if (u >= 0xD800 && u <= 0xDFFF) u = kReplacement;
        append_utf8(out, u);
    }
    return out;
}

}  // namespace ggdiff
