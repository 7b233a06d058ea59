#include "image/image_metadata.h"

#include <zlib.h>

#include <cstring>
#include <vector>

#include "core/log.h"
#include "core/safe_text.h"
#include "image/exif.h"
#include "image/file_io.h"
#include "image/image_format.h"
#include "image/image_io.h"
#include "image/text_encoding.h"
#include "image/video_io.h"

namespace ggdiff {

namespace {

using MaybeText = std::optional<std::string>;

constexpr size_t kMaxInflatedText = 64u << 20;
const char kKeyword[] = "parameters";

uint32_t be32(const uint8_t* p) {
    return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3];
}
uint32_t le32(const uint8_t* p) {
    return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

Result<std::string> inflate_text(const uint8_t* data, size_t size) {
    z_stream zs;
    std::memset(&zs, 0, sizeof zs);
    if (inflateInit(&zs) != Z_OK) return Status::Error("zlib initialization failed");
    zs.next_in = const_cast<Bytef*>(data);
    zs.avail_in = static_cast<uInt>(size);
    std::string out;
    char buf[16384];
    int rc = Z_OK;
    while (rc != Z_STREAM_END) {
        zs.next_out = reinterpret_cast<Bytef*>(buf);
        zs.avail_out = sizeof buf;
        rc = inflate(&zs, Z_NO_FLUSH);
        if (rc != Z_OK && rc != Z_STREAM_END) break;
        out.append(buf, sizeof buf - zs.avail_out);
        if (out.size() > kMaxInflatedText) {
            inflateEnd(&zs);
            return Status::Error("compressed text chunk inflates past 64 MiB");
        }
        if (rc == Z_OK && zs.avail_in == 0 && zs.avail_out != 0) break;  // input ended early
    }
    inflateEnd(&zs);
    if (rc != Z_STREAM_END) return Status::Error("corrupt compressed text chunk");
    return out;
}

// Splits "keyword\0rest"; false when there is no NUL or the keyword is not ours.
bool take_keyword(const uint8_t*& p, size_t& n) {
    const void* nul = std::memchr(p, 0, n);
    if (nul == nullptr) return false;
    const size_t key_len = static_cast<const uint8_t*>(nul) - p;
    if (key_len != sizeof kKeyword - 1 || std::memcmp(p, kKeyword, key_len) != 0) return false;
    p += key_len + 1;
    n -= key_len + 1;
    return true;
}

Result<MaybeText> png_text_chunk(const char* type, const uint8_t* p, size_t n) {
    if (!take_keyword(p, n)) return MaybeText();
    // The chunk type is 4 bytes, not a C string.
    const std::string what = "PNG " + escape_text(std::string(type, 4)) + " chunk: ";
    if (std::memcmp(type, "tEXt", 4) == 0) {
        return MaybeText(bytes_to_utf8(std::string(reinterpret_cast<const char*>(p), n)));
    }
    if (std::memcmp(type, "zTXt", 4) == 0) {
        if (n < 1 || p[0] != 0) return Status::Error(what + "unknown compression method");
        Result<std::string> text = inflate_text(p + 1, n - 1);
        if (!text.ok()) return Status::Error(what + text.status().message());
        return MaybeText(bytes_to_utf8(*text));
    }
    // iTXt: compression flag, method, language tag\0, translated keyword\0, text.
    if (n < 2) return Status::Error(what + "too short");
    const bool compressed = p[0] != 0;
    if (compressed && p[1] != 0) return Status::Error(what + "unknown compression method");
    p += 2, n -= 2;
    for (int field = 0; field < 2; ++field) {
        const void* nul = std::memchr(p, 0, n);
        if (nul == nullptr) return Status::Error(what + "malformed");
        const size_t len = static_cast<const uint8_t*>(nul) - p + 1;
        p += len, n -= len;
    }
    if (!compressed) return MaybeText(std::string(reinterpret_cast<const char*>(p), n));
    Result<std::string> text = inflate_text(p, n);
    if (!text.ok()) return Status::Error(what + text.status().message());
    return MaybeText(*text);
}

Result<MaybeText> png_parameters(const uint8_t* data, size_t size) {
    size_t pos = 8;
    while (pos < size) {
        if (size - pos < 12) return Status::Error("PNG: truncated data (unexpected end of file)");
        const uint32_t len = be32(data + pos);
        const char* type = reinterpret_cast<const char*>(data + pos + 4);
        if (len > 0x7FFFFFFFu || len > size - pos - 12) {
            return Status::Error("PNG: truncated data (unexpected end of file)");
        }
        const uint8_t* body = data + pos + 8;
        if (std::memcmp(type, "tEXt", 4) == 0 || std::memcmp(type, "zTXt", 4) == 0 ||
            std::memcmp(type, "iTXt", 4) == 0) {
            const uint32_t crc = static_cast<uint32_t>(
                crc32(crc32(0L, Z_NULL, 0), data + pos + 4, static_cast<uInt>(len + 4)));
            if (crc != be32(body + len)) {
                return Status::Error("PNG: CRC mismatch in " + escape_text(std::string(type, 4)) +
                                     " chunk (corrupt file)");
            }
            Result<MaybeText> text = png_text_chunk(type, body, len);
            if (!text.ok() || text->has_value()) return text;
        }
        if (std::memcmp(type, "IEND", 4) == 0) break;
        pos += 12 + len;
    }
    return MaybeText();
}

Result<MaybeText> jpeg_parameters(const uint8_t* data, size_t size) {
    std::string comment;
    bool have_comment = false;
    size_t pos = 2;
    for (;;) {
        if (pos >= size) return Status::Error("JPEG: truncated data (unexpected end of file)");
        if (data[pos] != 0xFF) return Status::Error("JPEG: corrupt marker structure");
        // Markers may be preceded by any number of 0xFF fill bytes.
        while (pos < size && data[pos] == 0xFF) ++pos;
        if (pos >= size) return Status::Error("JPEG: truncated data (unexpected end of file)");
        const uint8_t marker = data[pos++];
        if (marker == 0xD9 || marker == 0xDA) break;                         // EOI, start of scan
        if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) continue;  // no length
        if (size - pos < 2) return Status::Error("JPEG: truncated data (unexpected end of file)");
        const size_t len = size_t(data[pos]) << 8 | data[pos + 1];
        if (len < 2 || len > size - pos) {
            return Status::Error("JPEG: truncated data (unexpected end of file)");
        }
        const uint8_t* body = data + pos + 2;
        const size_t n = len - 2;
        if (marker == 0xE1 && n >= 6 && std::memcmp(body, "Exif\0\0", 6) == 0) {
            Result<MaybeText> text = exif_user_comment(body, n);
            if (!text.ok()) return text.status().with_context("JPEG EXIF");
            if (text->has_value()) return text;
        } else if (marker == 0xFE) {
            comment.append(reinterpret_cast<const char*>(body), n);
            have_comment = true;
        }
        pos += len;
    }
    if (have_comment) return MaybeText(bytes_to_utf8(comment));
    return MaybeText();
}

Result<MaybeText> webp_parameters(const uint8_t* data, size_t size) {
    size_t pos = 12;
    while (size - pos >= 8) {
        const uint32_t len = le32(data + pos + 4);
        if (len > size - pos - 8)
            return Status::Error("WebP: truncated data (unexpected end of file)");
        if (std::memcmp(data + pos, "EXIF", 4) == 0) {
            Result<MaybeText> text = exif_user_comment(data + pos + 8, len);
            if (!text.ok()) return text.status().with_context("WebP EXIF");
            return text;
        }
        pos += 8 + size_t(len) + (len & 1);
        if (pos > size) break;
    }
    return MaybeText();
}

}  // namespace

Result<std::optional<std::string>> decode_image_parameters(const uint8_t* data, size_t size) {
    // Videos -M vid_gen writes: an AVI's ICMT (animated WebP is a WebP here).
    if (is_avi_data(data, size)) return decode_avi_parameters(data, size);
    const Result<ImageFormat> format = detect_image_format_or_error(data, size);
    if (!format.ok()) return format.status();
    switch (*format) {
        case ImageFormat::Png:
            return png_parameters(data, size);
        case ImageFormat::Jpeg:
            return jpeg_parameters(data, size);
        case ImageFormat::WebP:
            return webp_parameters(data, size);
    }
    return MaybeText();
}

Result<std::string> read_image_parameters(const std::string& path) {
    const std::string context = "cannot read metadata of " + quote_name(path);
    Result<std::vector<uint8_t>> bytes = read_file_bytes(path, kMaxImageFileBytes);
    if (!bytes.ok()) return bytes.status().with_context(context);
    Result<MaybeText> text = decode_image_parameters(bytes->data(), bytes->size());
    if (!text.ok()) return text.status().with_context(context);
    if (!text->has_value())
        return Status::Error(quote_name(path) + " has no 'parameters' metadata");
    return std::move(**text);
}

}  // namespace ggdiff
