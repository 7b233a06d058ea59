#include "base64.h"

namespace ggdiff::server {

namespace {

const char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int value_of(char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62;
    if (c == '/' || c == '_') return 63;
    return -1;
}

bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

}  // namespace

std::string base64_encode(const uint8_t* data, size_t size) {
    std::string out;
    out.reserve((size + 2) / 3 * 4);
    size_t i = 0;
    for (; i + 3 <= size; i += 3) {
        const uint32_t v = (uint32_t(data[i]) << 16) | (uint32_t(data[i + 1]) << 8) | data[i + 2];
        out += kAlphabet[(v >> 18) & 63];
        out += kAlphabet[(v >> 12) & 63];
        out += kAlphabet[(v >> 6) & 63];
        out += kAlphabet[v & 63];
    }
    if (i < size) {
        uint32_t v = uint32_t(data[i]) << 16;
        if (i + 1 < size) v |= uint32_t(data[i + 1]) << 8;
        out += kAlphabet[(v >> 18) & 63];
        out += kAlphabet[(v >> 12) & 63];
        out += i + 1 < size ? kAlphabet[(v >> 6) & 63] : '=';
        out += '=';
    }
    return out;
}

std::optional<std::vector<uint8_t>> base64_decode(std::string_view text, std::string* error) {
    auto fail = [&](const std::string& message) -> std::optional<std::vector<uint8_t>> {
        if (error) *error = message;
        return std::nullopt;
    };
    if (text.rfind("data:", 0) == 0) {
        const size_t comma = text.find(',');
        if (comma == std::string_view::npos ||
            text.substr(0, comma).find(";base64") == std::string_view::npos) {
            return fail("a data URL must be \"data:<type>;base64,<data>\"");
        }
        text.remove_prefix(comma + 1);
    }
    std::vector<uint8_t> out;
    out.reserve(text.size() / 4 * 3);
    uint32_t acc = 0;
    int bits = 0;
    size_t padding = 0;
    size_t symbols = 0;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (is_space(c)) continue;
        if (c == '=') {
            ++padding;
            continue;
        }
        const int v = value_of(c);
        if (v < 0 || padding > 0) {
            return fail("invalid base64 character at offset " + std::to_string(i));
        }
        ++symbols;
        acc = (acc << 6) | static_cast<uint32_t>(v);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out.push_back(static_cast<uint8_t>((acc >> bits) & 0xFF));
        }
    }
    if (symbols % 4 == 1) return fail("base64 data is truncated");
    if (padding > 2) return fail("base64 data has too much padding");
    if (out.empty()) return fail("base64 data is empty");
    return out;
}

}  // namespace ggdiff::server
