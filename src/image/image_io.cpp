#include "image/image_io.h"

#include "core/safe_text.h"
#include "image/codecs.h"
#include "image/file_io.h"

namespace ggdiff {

Result<Image> decode_image(const uint8_t* data, size_t size, int64_t max_pixels) {
    const Result<ImageFormat> format = detect_image_format_or_error(data, size);
    if (!format.ok()) return format.status();
    switch (*format) {
        case ImageFormat::Png:
            return codec::decode_png(data, size, max_pixels);
        case ImageFormat::Jpeg:
            return codec::decode_jpeg(data, size, max_pixels);
        case ImageFormat::WebP:
            return codec::decode_webp(data, size, max_pixels);
    }
    return Status::Error("unsupported image format");
}

Result<Image> decode_image(const std::vector<uint8_t>& data) {
    return decode_image(data.data(), data.size());
}

Result<Image> read_image(const std::string& path) {
    Result<std::vector<uint8_t>> bytes = read_file_bytes(path, kMaxImageFileBytes);
    if (!bytes.ok()) return bytes.status().with_context("cannot read image " + quote_name(path));
    Result<Image> image = decode_image(*bytes);
    if (!image.ok()) return image.status().with_context("cannot decode image " + quote_name(path));
    return image;
}

Result<std::vector<uint8_t>> encode_image(const Image& image, ImageFormat format,
                                          const ImageWriteOptions& options) {
    GGDIFF_TRY(validate_image(image).with_context("cannot encode image"));
    switch (format) {
        case ImageFormat::Png:
            return codec::encode_png(image, options.png_compression, options.parameters);
        case ImageFormat::Jpeg:
            return codec::encode_jpeg(image, options.quality, options.parameters);
        case ImageFormat::WebP:
            return codec::encode_webp(image, options.quality, options.lossless, options.parameters);
    }
    return Status::Error("unsupported image format");
}

Status check_image_output_path(const std::string& path) {
    Result<ImageFormat> format = image_format_from_path(path);
    if (!format.ok()) return format.status();
    return check_output_target(path).with_context("cannot write image " + quote_name(path));
}

Status write_image(const std::string& path, const Image& image, const ImageWriteOptions& options) {
    const std::string context = "cannot write image " + quote_name(path);
    Result<ImageFormat> format = image_format_from_path(path);
    if (!format.ok()) return format.status();
    Result<std::vector<uint8_t>> bytes = encode_image(image, *format, options);
    if (!bytes.ok()) return bytes.status().with_context(context);
    return write_file_atomic(path, bytes->data(), bytes->size()).with_context(context);
}

}  // namespace ggdiff
