#include "core/safe_text.h"

#include <cstdint>
#include <cstdio>

namespace ggdiff {

namespace {

// Length of the well-formed UTF-8 sequence at s[i] and its code point; 0 when the bytes
// there are not one (a lone continuation byte, an overlong form, a surrogate, a truncation).
size_t utf8_sequence(std::string_view s, size_t i, uint32_t* cp) {
    const auto b = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
    const uint8_t c = b(i);
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    size_t len;
    uint32_t v, min;
    if ((c & 0xE0) == 0xC0) {
        len = 2, v = c & 0x1F, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
        len = 3, v = c & 0x0F, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
        len = 4, v = c & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (len > s.size() - i) return 0;
    for (size_t k = 1; k < len; ++k) {
        if ((b(i + k) & 0xC0) != 0x80) return 0;
        v = v << 6 | (b(i + k) & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
    *cp = v;
    return len;
}

bool is_control(uint32_t cp) {
    return cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F);
}

void append_escaped(std::string& out, uint32_t cp, bool keep_newlines) {
    char buf[8];
    switch (cp) {
        case '\n':
            out += keep_newlines ? "\n" : "\\n";
            return;
        case '\t':
            out += keep_newlines ? "\t" : "\\t";
            return;
        case '\r':
            out += "\\r";
            return;
        default:
            break;
    }
    if (cp < 0x80) {
        std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(cp));
    } else {
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
    }
    out += buf;
}

std::string escape_impl(std::string_view s, size_t max_bytes, bool keep_newlines) {
    std::string out;
    out.reserve(s.size());
    size_t i = 0;
    while (i < s.size()) {
        if (max_bytes && i >= max_bytes) {
            out += "...";
            break;
        }
        uint32_t cp = 0;
        const size_t len = utf8_sequence(s, i, &cp);
        if (len == 0) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(uint8_t(s[i])));
            out += buf;
            ++i;
            continue;
        }
        if (is_control(cp)) {
            append_escaped(out, cp, keep_newlines);
        } else {
            out.append(s.data() + i, len);
        }
        i += len;
    }
    return out;
}

}  // namespace

bool utf8_valid(std::string_view s) {
    for (size_t i = 0; i < s.size();) {
        uint32_t cp = 0;
        const size_t len = utf8_sequence(s, i, &cp);
        if (len == 0) return false;
        i += len;
    }
    return true;
}

std::string escape_text(std::string_view s, size_t max_bytes) {
    return escape_impl(s, max_bytes, false);
}

std::string quote_name(std::string_view s) {
    return "'" + escape_impl(s, 1024, false) + "'";
}

std::string escape_log_text(std::string_view s) {
    return escape_impl(s, 0, true);
}

Status check_name(std::string_view name, const char* what, size_t max_bytes) {
    if (name.empty()) return Status::Error(std::string(what) + " is empty");
    if (name.size() > max_bytes) {
        return Status::Error(std::string(what) + " " + quote_name(name) + " is " +
                             std::to_string(name.size()) + " bytes long (limit " +
                             std::to_string(max_bytes) + ")");
    }
    for (size_t i = 0; i < name.size();) {
        uint32_t cp = 0;
        const size_t len = utf8_sequence(name, i, &cp);
        if (len == 0) {
            return Status::Error(std::string(what) + " " + quote_name(name) +
                                 " is not valid UTF-8 (at byte " + std::to_string(i) + ")");
        }
        if (is_control(cp)) {
            std::string esc;
            append_escaped(esc, cp, false);
            return Status::Error(std::string(what) + " " + quote_name(name) +
                                 " contains a control character (" + esc + " at byte " +
                                 std::to_string(i) + ")");
        }
        i += len;
    }
    return Status::Ok();
}

}  // namespace ggdiff
