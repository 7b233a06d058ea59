#include "image/image_format.h"

#include <cstring>

#include "core/log.h"
#include "core/safe_text.h"

namespace ggdiff {

namespace {

std::string to_lower(std::string s) {
    for (char& c : s) {
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
    return s;
}

bool starts_with(const uint8_t* data, size_t size, const char* magic, size_t n) {
    return size >= n && std::memcmp(data, magic, n) == 0;
}

}  // namespace

const char* image_format_name(ImageFormat format) {
    switch (format) {
        case ImageFormat::Png:
            return "png";
        case ImageFormat::Jpeg:
            return "jpeg";
        case ImageFormat::WebP:
            return "webp";
    }
    return "unknown";
}

const char* image_format_mime_type(ImageFormat format) {
    switch (format) {
        case ImageFormat::Png:
            return "image/png";
        case ImageFormat::Jpeg:
            return "image/jpeg";
        case ImageFormat::WebP:
            return "image/webp";
    }
    return "application/octet-stream";
}

const char* image_format_extension(ImageFormat format) {
    switch (format) {
        case ImageFormat::Png:
            return ".png";
        case ImageFormat::Jpeg:
            return ".jpg";
        case ImageFormat::WebP:
            return ".webp";
    }
    return "";
}

std::optional<ImageFormat> detect_image_format(const uint8_t* data, size_t size) {
    if (data == nullptr) return std::nullopt;
    if (starts_with(data, size, "\x89PNG\r\n\x1a\n", 8)) return ImageFormat::Png;
    if (starts_with(data, size, "\xff\xd8\xff", 3)) return ImageFormat::Jpeg;
    if (size >= 12 && starts_with(data, size, "RIFF", 4) && std::memcmp(data + 8, "WEBP", 4) == 0) {
        return ImageFormat::WebP;
    }
    return std::nullopt;
}

std::string describe_unknown_image_data(const uint8_t* data, size_t size) {
    if (data == nullptr || size == 0) return "no data";
    struct Known {
        const char* magic;
        size_t n;
        const char* name;
    };
    static const Known kKnown[] = {
        {"GIF8", 4, "GIF images are not supported"},
        {"BM", 2, "BMP images are not supported"},
        {"II*\0", 4, "TIFF images are not supported"},
        {"MM\0*", 4, "TIFF images are not supported"},
        {"\0\0\0\x0c"
         "jP",
         6, "JPEG 2000 images are not supported"},
        {"\x89PNG", 4, "damaged PNG signature"},
    };
    for (const Known& k : kKnown) {
        if (starts_with(data, size, k.magic, k.n)) return k.name;
    }
    if (size >= 12 && std::memcmp(data + 4, "ftyp", 4) == 0) {
        return "AVIF/HEIF images are not supported";
    }
    std::string hex = "data starts with";
    for (size_t i = 0; i < size && i < 8; ++i) hex += string_format(" %02x", data[i]);
    return hex;
}

Result<ImageFormat> image_format_from_path(const std::string& path) {
    const size_t slash = path.find_last_of('/');
    const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
    const size_t dot = base.find_last_of('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == base.size()) {
        return Status::Error("cannot tell the image format of " + quote_name(path) +
                             ": no file extension (use .png, .jpg, .jpeg or .webp)");
    }
    const std::string ext = to_lower(base.substr(dot));
    if (ext == ".png") return ImageFormat::Png;
    if (ext == ".jpg" || ext == ".jpeg") return ImageFormat::Jpeg;
    if (ext == ".webp") return ImageFormat::WebP;
    return Status::Error("unknown image file extension " + quote_name(base.substr(dot)) + " in " +
                         quote_name(path) + " (use .png, .jpg, .jpeg or .webp)");
}

Result<ImageFormat> parse_image_format(const std::string& name) {
    const std::string n = to_lower(name);
    if (n == "png") return ImageFormat::Png;
    if (n == "jpg" || n == "jpeg") return ImageFormat::Jpeg;
    if (n == "webp") return ImageFormat::WebP;
    return Status::Error("unknown image format " + quote_name(name) +
                         " (expected png, jpeg or webp)");
}

Result<ImageFormat> detect_image_format_or_error(const uint8_t* data, size_t size) {
    if (data == nullptr || size == 0) return Status::Error("no image data (empty input)");
    const std::optional<ImageFormat> format = detect_image_format(data, size);
    if (!format) {
        return Status::Error("not a PNG, JPEG or WebP image: " +
                             describe_unknown_image_data(data, size));
    }
    return *format;
}

}  // namespace ggdiff
