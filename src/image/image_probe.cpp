#include "image/image_probe.h"

#include <string>

#include <webp/decode.h>

#include "image/image_format.h"

namespace ggdiff {

namespace {

uint32_t be32(const uint8_t* p) {
    return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | p[3];
}

uint16_t be16(const uint8_t* p) {
    return static_cast<uint16_t>((p[0] << 8) | p[1]);
}

Result<ImageSize> probe_png(const uint8_t* data, size_t size) {
    // 8-byte signature, then the IHDR chunk: length, "IHDR", width, height.
    if (size < 24 || std::string(reinterpret_cast<const char*>(data + 12), 4) != "IHDR") {
        return Status::Error("PNG data ends before its IHDR header");
    }
    return ImageSize{be32(data + 16), be32(data + 20)};
}

bool is_sof(uint8_t marker) {
    // SOF0..SOF15 except DHT (C4), JPG (C8) and DAC (CC).
    return marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
}

Result<ImageSize> probe_jpeg(const uint8_t* data, size_t size) {
    size_t i = 2;  // after SOI
    while (i + 4 <= size) {
        if (data[i] != 0xFF) return Status::Error("JPEG data has a broken segment structure");
        const uint8_t marker = data[i + 1];
        if (marker == 0xFF) {  // fill byte
            ++i;
            continue;
        }
        if (marker == 0xD8 || (marker >= 0xD0 && marker <= 0xD7) || marker == 0x01) {
            i += 2;  // markers without a length
            continue;
        }
        if (marker == 0xD9 || marker == 0xDA) break;  // EOI or scan data before any SOF
        const size_t len = be16(data + i + 2);
        if (len < 2) return Status::Error("JPEG data has a broken segment length");
        if (is_sof(marker)) {
            if (i + 9 > size) break;
            return ImageSize{be16(data + i + 7), be16(data + i + 5)};
        }
        i += 2 + len;
    }
    return Status::Error("JPEG data has no frame header (SOF) before its image data");
}

Result<ImageSize> probe_webp(const uint8_t* data, size_t size) {
    int w = 0, h = 0;
    if (!WebPGetInfo(data, size, &w, &h)) return Status::Error("WebP data has a broken header");
    return ImageSize{w, h};
}

}  // namespace

Result<ImageSize> probe_image_size(const uint8_t* data, size_t size) {
    const Result<ImageFormat> format = detect_image_format_or_error(data, size);
    if (!format.ok()) return format.status();
    switch (*format) {
        case ImageFormat::Png:
            return probe_png(data, size);
        case ImageFormat::Jpeg:
            return probe_jpeg(data, size);
        case ImageFormat::WebP:
            return probe_webp(data, size);
    }
    return Status::Error("unsupported image format");
}

}  // namespace ggdiff
