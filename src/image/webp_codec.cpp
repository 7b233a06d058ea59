// WebP through libwebp; metadata goes into an extended-format (VP8X) EXIF chunk that we add
// to libwebp's output ourselves, so only libwebp (not libwebpmux) is needed.
#include <webp/decode.h>
#include <webp/encode.h>

#include <cstring>
#include <new>

#include "core/log.h"
#include "image/codecs.h"
#include "image/exif.h"

namespace ggdiff::codec {

namespace {

constexpr uint8_t kVp8xAlpha = 0x10;
constexpr uint8_t kVp8xExif = 0x08;

const char* vp8_status_text(VP8StatusCode code) {
    switch (code) {
        case VP8_STATUS_OK:
            return "ok";
        case VP8_STATUS_OUT_OF_MEMORY:
            return "out of memory";
        case VP8_STATUS_INVALID_PARAM:
            return "invalid parameter";
        case VP8_STATUS_BITSTREAM_ERROR:
            return "corrupt bitstream";
        case VP8_STATUS_UNSUPPORTED_FEATURE:
            return "unsupported feature";
        case VP8_STATUS_SUSPENDED:
            return "suspended";
        case VP8_STATUS_USER_ABORT:
            return "aborted";
        case VP8_STATUS_NOT_ENOUGH_DATA:
            return "truncated data (unexpected end of file)";
    }
    return "unknown error";
}

const char* encoding_error_text(WebPEncodingError code) {
    switch (code) {
        case VP8_ENC_OK:
            return "ok";
        case VP8_ENC_ERROR_OUT_OF_MEMORY:
        case VP8_ENC_ERROR_BITSTREAM_OUT_OF_MEMORY:
            return "out of memory";
        case VP8_ENC_ERROR_BAD_DIMENSION:
            return "bad dimensions (WebP allows at most 16383)";
        case VP8_ENC_ERROR_PARTITION0_OVERFLOW:
        case VP8_ENC_ERROR_PARTITION_OVERFLOW:
            return "partition overflow";
        case VP8_ENC_ERROR_FILE_TOO_BIG:
            return "file too big";
        default:
            return "encoder error";
    }
}

void put_le(std::vector<uint8_t>& v, uint32_t x, int bytes) {
    for (int i = 0; i < bytes; ++i) v.push_back(static_cast<uint8_t>(x >> (8 * i)));
}

uint32_t get_le32(const uint8_t* p) {
    return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

void append_chunk(std::vector<uint8_t>& out, const char* fourcc, const uint8_t* data, size_t size) {
    out.insert(out.end(), fourcc, fourcc + 4);
    put_le(out, static_cast<uint32_t>(size), 4);
    out.insert(out.end(), data, data + size);
    if (size & 1) out.push_back(0);
}

// Rebuilds a simple or extended WebP file as extended format with an EXIF chunk.
Result<std::vector<uint8_t>> add_exif_chunk(const std::vector<uint8_t>& webp, const Image& image,
                                            const std::vector<uint8_t>& exif) {
    if (webp.size() < 12) return Status::Error("WebP: encoder output too short");
    std::vector<uint8_t> out = {'R', 'I', 'F', 'F', 0, 0, 0, 0, 'W', 'E', 'B', 'P'};
    uint8_t flags = kVp8xExif;
    std::vector<uint8_t> body;  // the image chunks, copied as they are
    size_t pos = 12;
    while (pos + 8 <= webp.size()) {
        const uint32_t size = get_le32(&webp[pos + 4]);
        const size_t padded = size + (size & 1);
        if (padded > webp.size() - pos - 8) return Status::Error("WebP: bad encoder output");
        const uint8_t* chunk = &webp[pos];
        if (std::memcmp(chunk, "VP8X", 4) == 0) {
            if (size >= 1) flags |= chunk[8];
        } else {
            // Alpha is used when there is an ALPH chunk or the VP8L header says so.
            if (std::memcmp(chunk, "ALPH", 4) == 0) flags |= kVp8xAlpha;
            if (std::memcmp(chunk, "VP8L", 4) == 0 && size >= 5 && (chunk[12] & 0x10)) {
                flags |= kVp8xAlpha;
            }
            body.insert(body.end(), webp.begin() + pos, webp.begin() + pos + 8 + padded);
        }
        pos += 8 + padded;
    }
    std::vector<uint8_t> vp8x;
    vp8x.push_back(flags);
    put_le(vp8x, 0, 3);
    put_le(vp8x, static_cast<uint32_t>(image.width - 1), 3);
    put_le(vp8x, static_cast<uint32_t>(image.height - 1), 3);
    append_chunk(out, "VP8X", vp8x.data(), vp8x.size());
    out.insert(out.end(), body.begin(), body.end());
    append_chunk(out, "EXIF", exif.data(), exif.size());
    const uint32_t riff_size = static_cast<uint32_t>(out.size() - 8);
    for (int i = 0; i < 4; ++i) out[4 + i] = static_cast<uint8_t>(riff_size >> (8 * i));
    return out;
}

}  // namespace

Result<Image> decode_webp(const uint8_t* data, size_t size, int64_t max_pixels) {
    WebPBitstreamFeatures features;
    const VP8StatusCode code = WebPGetFeatures(data, size, &features);
    if (code != VP8_STATUS_OK) {
        return Status::Error(std::string("WebP: ") + vp8_status_text(code));
    }
    if (features.has_animation) return Status::Error("WebP: animated images are not supported");
    GGDIFF_TRY(check_image_dimensions(features.width, features.height, max_pixels));
    Image image;
    image.width = features.width;
    image.height = features.height;
    image.channels = features.has_alpha ? 4 : 3;
    try {
        image.pixels.resize(image.byte_size());
    } catch (const std::bad_alloc&) {
        return Status::Error("WebP: out of memory");
    }
    const int stride = static_cast<int>(image.row_bytes());
    const uint8_t* ok =
        features.has_alpha
            ? WebPDecodeRGBAInto(data, size, image.pixels.data(), image.pixels.size(), stride)
            : WebPDecodeRGBInto(data, size, image.pixels.data(), image.pixels.size(), stride);
    if (ok == nullptr) return Status::Error("WebP: corrupt or truncated data");
    return image;
}

Result<std::vector<uint8_t>> encode_webp(const Image& image, int quality, bool lossless,
                                         const std::string& parameters) {
    GGDIFF_TRY(validate_image(image));
    if (image.width > WEBP_MAX_DIMENSION || image.height > WEBP_MAX_DIMENSION) {
        return Status::Error(string_format("WebP: %dx%d exceeds the format's limit of %d per side",
                                           image.width, image.height, WEBP_MAX_DIMENSION));
    }
    Image converted;
    const Image* src = &image;
    if (image.channels < 3) {
        converted = convert_channels(image, image.channels + 2);
        src = &converted;
    }
    WebPConfig config;
    if (!WebPConfigInit(&config)) return Status::Error("WebP: library version mismatch");
    config.quality = static_cast<float>(quality < 0 ? 0 : (quality > 100 ? 100 : quality));
    config.lossless = lossless ? 1 : 0;
    config.exact = lossless ? 1 : 0;  // keep RGB under transparent pixels bit-exact
    if (!WebPValidateConfig(&config)) return Status::Error("WebP: invalid encoder settings");

    WebPPicture picture;
    if (!WebPPictureInit(&picture)) return Status::Error("WebP: library version mismatch");
    picture.use_argb = 1;
    picture.width = src->width;
    picture.height = src->height;
    const int stride = static_cast<int>(src->row_bytes());
    const int imported = src->channels == 4
                             ? WebPPictureImportRGBA(&picture, src->pixels.data(), stride)
                             : WebPPictureImportRGB(&picture, src->pixels.data(), stride);
    if (!imported) {
        WebPPictureFree(&picture);
        return Status::Error("WebP: out of memory");
    }
    WebPMemoryWriter writer;
    WebPMemoryWriterInit(&writer);
    picture.writer = WebPMemoryWrite;
    picture.custom_ptr = &writer;
    const int encoded = WebPEncode(&config, &picture);
    const WebPEncodingError error = picture.error_code;
    WebPPictureFree(&picture);
    if (!encoded) {
        WebPMemoryWriterClear(&writer);
        return Status::Error(std::string("WebP: encoding failed (") + encoding_error_text(error) +
                             ")");
    }
    std::vector<uint8_t> out(writer.mem, writer.mem + writer.size);
    WebPMemoryWriterClear(&writer);
    if (parameters.empty()) return out;
    return add_exif_chunk(out, *src, make_exif_user_comment(parameters));
}

}  // namespace ggdiff::codec
