#include "images.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <vector>

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
    unsigned char* bytes = nullptr;
    size_t size = 0;
    if (ggdiff_base64_decode(text.data(), text.size(), &bytes, &size) != 0) {
        throw bad_field(field, ggdiff_last_error());
    }
    std::unique_ptr<unsigned char, decltype(&std::free)> owned(bytes, &std::free);
    return decode_upload(bytes, size, max_pixels, field);
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

std::string to_base64(const std::vector<uint8_t>& bytes) {
    char* text = ggdiff_base64_encode(bytes.data(), bytes.size());
    if (!text) throw std::runtime_error(ggdiff_last_error());
    std::string out(text);
    std::free(text);
    return out;
}

std::string to_base64(const EncodedImage& image) {
    return to_base64(image.bytes);
}

const char* mime_type(const std::string& format) {
    if (format == "jpeg") return "image/jpeg";
    if (format == "webp") return "image/webp";
    if (format == "avi") return "video/x-msvideo";
    return "image/png";
}

namespace {

// One pass of a Gaussian blur over a w x h grey plane along x (dx = 1) or y.
void gaussian_pass(std::vector<float>& v, int w, int h, double sigma, bool along_x) {
    const int radius = static_cast<int>(2.5 * sigma + 0.5);
    std::vector<float> k(static_cast<size_t>(2 * radius + 1));
    double sum = 0.0;
    for (int i = -radius; i <= radius; ++i) {
        k[static_cast<size_t>(i + radius)] =
            static_cast<float>(std::exp(-(i * i) / (2.0 * sigma * sigma)));
        sum += k[static_cast<size_t>(i + radius)];
    }
    for (float& x : k) x = static_cast<float>(x / sum);
    const int n = along_x ? w : h;
    // Mirrored edge without repeating the edge pixel (OpenCV's default border).
    auto mirror = [n](int i) {
        if (n == 1) return 0;
        while (i < 0 || i >= n) i = i < 0 ? -i : 2 * (n - 1) - i;
        return i;
    };
    std::vector<float> out(v.size());
    for (int y = 0; y < h; ++y) {
        for (int x = 0; x < w; ++x) {
            double acc = 0.0;
            for (int i = -radius; i <= radius; ++i) {
                const int sx = along_x ? mirror(x + i) : x;
                const int sy = along_x ? y : mirror(y + i);
                acc += k[static_cast<size_t>(i + radius)] * v[static_cast<size_t>(sy) * w + sx];
            }
            out[static_cast<size_t>(y) * w + x] = static_cast<float>(acc);
        }
    }
    v.swap(out);
}

}  // namespace

ImagePtr a1111_mask(ImagePtr mask, bool invert, double blur_x, double blur_y) {
    const int w = mask->width, h = mask->height, c = mask->channels;
    const size_t pixels = static_cast<size_t>(w) * static_cast<size_t>(h);
    bool transparent = false;
    for (size_t i = 0; c == 4 && i < pixels && !transparent; ++i)
        transparent = mask->data[i * 4 + 3] != 255;
    std::vector<float> grey(pixels);
    for (size_t i = 0; i < pixels; ++i) {
        const unsigned char* px = mask->data + i * static_cast<size_t>(c);
        // PIL's "L": (299 R + 587 G + 114 B) / 1000.
        grey[i] =
            transparent ? px[3] : (299.0f * px[0] + 587.0f * px[1] + 114.0f * px[2]) / 1000.0f;
        if (invert) grey[i] = 255.0f - grey[i];
    }
    if (blur_x > 0) gaussian_pass(grey, w, h, blur_x, true);
    if (blur_y > 0) gaussian_pass(grey, w, h, blur_y, false);
    for (size_t i = 0; i < pixels; ++i) {
        unsigned char* px = mask->data + i * static_cast<size_t>(c);
        const auto v = static_cast<unsigned char>(std::lround(std::clamp(grey[i], 0.0f, 255.0f)));
        px[0] = px[1] = px[2] = v;
        if (c == 4) px[3] = 255;
    }
    return mask;
}

ImagePtr openai_mask(ImagePtr mask) {
    if (mask->channels != 4) return mask;
    const size_t pixels = static_cast<size_t>(mask->width) * static_cast<size_t>(mask->height);
    for (size_t i = 0; i < pixels; ++i) {
        unsigned char* px = mask->data + i * 4;
        const unsigned char v = px[3] < 128 ? 255 : 0;
        px[0] = px[1] = px[2] = v;
        px[3] = 255;
    }
    return mask;
}

}  // namespace ggdiff::server
