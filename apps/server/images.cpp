#include "images.h"

#include <cstdlib>
#include <stdexcept>

#include "base64.h"
#include "request_error.h"

namespace ggdiff::server {

ImagePtr decode_upload(const uint8_t* data, size_t size, int64_t max_pixels,
                       const std::string& field) {
    if (size == 0) throw bad_field(field, "the image is empty");
    ggdiff_image* image = nullptr;
    if (ggdiff_image_decode(data, size, max_pixels, &image) != 0) {
        const std::string why = ggdiff_last_error();
        const bool too_large = why.find("exceeds the limit") != std::string::npos;
        throw RequestError(too_large ? 413 : 400, field, why);
    }
    return ImagePtr(image);
}

ImagePtr decode_base64_upload(const std::string& text, int64_t max_pixels,
                              const std::string& field) {
    std::string error;
    auto bytes = base64_decode(text, &error);
    if (!bytes) throw bad_field(field, error);
    return decode_upload(bytes->data(), bytes->size(), max_pixels, field);
}

EncodedImage encode_result(const ggdiff_image& image, const std::string& format, int quality,
                           bool embed_parameters) {
    ggdiff_image copy = image;
    if (!embed_parameters) copy.parameters = nullptr;
    unsigned char* bytes = nullptr;
    size_t size = 0;
    if (ggdiff_image_encode(&copy, format.c_str(), quality, &bytes, &size) != 0) {
        throw std::runtime_error(std::string("encoding the image failed: ") + ggdiff_last_error());
    }
    EncodedImage out;
    out.bytes.assign(bytes, bytes + size);
    std::free(bytes);
    out.format = format == "jpg" ? "jpeg" : format;
    out.width = image.width;
    out.height = image.height;
    out.seed = image.seed;
    out.parameters = image.parameters ? image.parameters : "";
    return out;
}

std::string to_base64(const EncodedImage& image) {
    return base64_encode(image.bytes.data(), image.bytes.size());
}

const char* mime_type(const std::string& format) {
    if (format == "jpeg") return "image/jpeg";
    if (format == "webp") return "image/webp";
    return "image/png";
}

}  // namespace ggdiff::server
