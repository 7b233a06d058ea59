#include "image/image.h"

#include <algorithm>

#include "core/log.h"

namespace ggdiff {

Status check_image_dimensions(int64_t width, int64_t height, int64_t max_pixels) {
    max_pixels = std::min(max_pixels, kMaxImagePixels);
    if (width <= 0 || height <= 0) {
        return Status::Error(
            string_format("invalid image size %lldx%lld", (long long)width, (long long)height));
    }
    if (width > kMaxImageSide || height > kMaxImageSide) {
        return Status::Error(
            string_format("image size %lldx%lld exceeds the limit of %d pixels per side",
                          (long long)width, (long long)height, kMaxImageSide));
    }
    if (width * height > max_pixels) {
        return Status::Error(string_format("image size %lldx%lld exceeds the limit of %lld pixels",
                                           (long long)width, (long long)height,
                                           (long long)max_pixels));
    }
    return Status::Ok();
}

Status validate_image(const Image& image) {
    GGDIFF_TRY(check_image_dimensions(image.width, image.height));
    if (image.channels < 1 || image.channels > 4) {
        return Status::Error(
            string_format("unsupported channel count %d (expected 1 to 4)", image.channels));
    }
    if (image.pixels.size() != image.byte_size()) {
        return Status::Error(string_format("pixel buffer holds %zu bytes, %dx%dx%d needs %zu",
                                           image.pixels.size(), image.width, image.height,
                                           image.channels, image.byte_size()));
    }
    return Status::Ok();
}

Image convert_channels(const Image& image, int channels) {
    if (channels == image.channels) return image;
    Image out;
    out.width = image.width;
    out.height = image.height;
    out.channels = channels;
    const size_t n = static_cast<size_t>(image.width) * static_cast<size_t>(image.height);
    out.pixels.resize(n * static_cast<size_t>(channels));
    const int in_c = image.channels;
    const bool in_color = in_c >= 3;
    const bool in_alpha = in_c == 2 || in_c == 4;
    const bool out_color = channels >= 3;
    const bool out_alpha = channels == 2 || channels == 4;
    for (size_t i = 0; i < n; ++i) {
        const uint8_t* s = &image.pixels[i * in_c];
        uint8_t* d = &out.pixels[i * channels];
        if (out_color) {
            if (in_color) {
                d[0] = s[0], d[1] = s[1], d[2] = s[2];
            } else {
                d[0] = d[1] = d[2] = s[0];
            }
        } else if (in_color) {
            d[0] = static_cast<uint8_t>((299 * s[0] + 587 * s[1] + 114 * s[2] + 500) / 1000);
        } else {
            d[0] = s[0];
        }
        if (out_alpha) d[channels - 1] = in_alpha ? s[in_c - 1] : 255;
    }
    return out;
}

}  // namespace ggdiff
