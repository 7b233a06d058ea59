#include "core/base64.h"

#include "core/log.h"

namespace ggdiff {

namespace {

const char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int decode_char(char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62;
    if (c == '/' || c == '_') return 63;
    return -1;
}

bool is_space(char c) {
    return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\f';
}

std::string describe_char(char c) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7F) return string_format("'%c'", c);
    return string_format("byte 0x%02x", u);
}

}  // namespace

std::string base64_encode(const uint8_t* data, size_t size) {
    std::string out;
    out.reserve((size + 2) / 3 * 4);
    size_t i = 0;
    for (; i + 3 <= size; i += 3) {
        const uint32_t v = uint32_t(data[i]) << 16 | uint32_t(data[i + 1]) << 8 | data[i + 2];
        out += kAlphabet[v >> 18];
        out += kAlphabet[(v >> 12) & 63];
        out += kAlphabet[(v >> 6) & 63];
        out += kAlphabet[v & 63];
    }
    if (i < size) {
        uint32_t v = uint32_t(data[i]) << 16;
        if (i + 1 < size) v |= uint32_t(data[i + 1]) << 8;
        out += kAlphabet[v >> 18];
        out += kAlphabet[(v >> 12) & 63];
        out += i + 1 < size ? kAlphabet[(v >> 6) & 63] : '=';
        out += '=';
    }
    return out;
}

std::string base64_encode(const std::vector<uint8_t>& data) {
    return base64_encode(data.data(), data.size());
}

Result<std::vector<uint8_t>> base64_decode(std::string_view text) {
    size_t start = 0;
    if (text.substr(0, 5) == "data:") {
        const size_t comma = text.find(',');
        if (comma == std::string_view::npos ||
            text.substr(0, comma).find(";base64") == std::string_view::npos) {
            return Status::Error("invalid base64: data URL without ';base64,'");
        }
        start = comma + 1;
    }
    std::vector<uint8_t> out;
    out.reserve((text.size() - start) / 4 * 3 + 3);
    uint32_t acc = 0;
    int bits = 0;
    size_t digits = 0, padding = 0;
    for (size_t i = start; i < text.size(); ++i) {
        const char c = text[i];
        if (is_space(c)) continue;
        if (c == '=') {
            ++padding;
            continue;
        }
        const int v = decode_char(c);
        if (v < 0 || padding > 0) {
            return Status::Error("invalid base64: unexpected " + describe_char(c) +
                                 string_format(" at offset %zu", i));
        }
        acc = (acc << 6) | static_cast<uint32_t>(v);
        bits += 6;
        ++digits;
        if (bits >= 8) {
            bits -= 8;
            out.push_back(static_cast<uint8_t>(acc >> bits));
            acc &= (1u << bits) - 1;
        }
    }
    if (digits % 4 == 1) {
        return Status::Error(string_format(
            "invalid base64: truncated input (%zu digits, a lone final digit)", digits));
    }
    if (padding > 2 || (padding > 0 && (digits + padding) % 4 != 0)) {
        return Status::Error("invalid base64: bad padding");
    }
    return out;
}

}  // namespace ggdiff
