#include "pipeline/latent_image.h"

#include <algorithm>
#include <cmath>

namespace ggdiff {

HostTensor image_to_tensor(const Image& img, int channels) {
    if (channels == 4 && img.channels != 4) return image_to_tensor(convert_channels(img, 4), 4);
    HostTensor t({img.width, img.height, channels, 1});
    const int64_t plane = static_cast<int64_t>(img.width) * img.height;
    for (int y = 0; y < img.height; ++y) {
        for (int x = 0; x < img.width; ++x) {
            const uint8_t* px =
                &img.pixels[(static_cast<size_t>(y) * img.width + x) * img.channels];
            for (int c = 0; c < channels; ++c) {
                const uint8_t v = c == 3 ? px[3] : img.channels >= 3 ? px[c] : px[0];
                t.data[c * plane + static_cast<int64_t>(y) * img.width + x] =
                    v / 255.0f * 2.0f - 1.0f;
            }
        }
    }
    return t;
}

Image tensor_to_image(const HostTensor& t) {
    Image img;
    img.width = static_cast<int>(t.dim(0));
    img.height = static_cast<int>(t.dim(1));
    const int ch = t.dim(2) >= 4 ? 4 : 3;
    img.channels = ch;
    img.pixels.resize(static_cast<size_t>(img.width) * img.height * ch);
    const int64_t plane = static_cast<int64_t>(img.width) * img.height;
    for (int y = 0; y < img.height; ++y) {
        for (int x = 0; x < img.width; ++x) {
            for (int c = 0; c < ch; ++c) {
                float v =
                    (t.data[c * plane + static_cast<int64_t>(y) * img.width + x] + 1.0f) * 0.5f;
                v = std::min(1.0f, std::max(0.0f, v));
                img.pixels[(static_cast<size_t>(y) * img.width + x) * ch + c] =
                    static_cast<uint8_t>(v * 255.0f);
            }
        }
    }
    return img;
}

Image resize_image_nearest(const Image& img, int width, int height) {
    Image out;
    out.width = width;
    out.height = height;
    out.channels = img.channels;
    out.pixels.resize(static_cast<size_t>(width) * height * img.channels);
    for (int y = 0; y < height; ++y) {
        const size_t sy = static_cast<size_t>(static_cast<int64_t>(y) * img.height / height);
        for (int x = 0; x < width; ++x) {
            const size_t sx = static_cast<size_t>(static_cast<int64_t>(x) * img.width / width);
            std::copy_n(&img.pixels[(sy * img.width + sx) * img.channels], img.channels,
                        &out.pixels[(static_cast<size_t>(y) * width + x) * img.channels]);
        }
    }
    return out;
}

Image resize_image(const Image& img, int width, int height) {
    Image out;
    out.width = width;
    out.height = height;
    out.channels = img.channels;
    out.pixels.resize(static_cast<size_t>(width) * height * img.channels);
    const float sx = static_cast<float>(img.width) / width;
    const float sy = static_cast<float>(img.height) / height;
    for (int y = 0; y < height; ++y) {
        const float fy = std::max(0.0f, (y + 0.5f) * sy - 0.5f);
        const int y0 = std::min(static_cast<int>(fy), img.height - 1);
        const int y1 = std::min(y0 + 1, img.height - 1);
        const float wy = fy - y0;
        for (int x = 0; x < width; ++x) {
            const float fx = std::max(0.0f, (x + 0.5f) * sx - 0.5f);
            const int x0 = std::min(static_cast<int>(fx), img.width - 1);
            const int x1 = std::min(x0 + 1, img.width - 1);
            const float wx = fx - x0;
            for (int c = 0; c < img.channels; ++c) {
                auto at = [&](int xx, int yy) {
                    return static_cast<float>(
                        img.pixels[(static_cast<size_t>(yy) * img.width + xx) * img.channels + c]);
                };
                const float v = (at(x0, y0) * (1 - wx) + at(x1, y0) * wx) * (1 - wy) +
                                (at(x0, y1) * (1 - wx) + at(x1, y1) * wx) * wy;
                out.pixels[(static_cast<size_t>(y) * width + x) * img.channels + c] =
                    static_cast<uint8_t>(std::lround(std::min(255.0f, std::max(0.0f, v))));
            }
        }
    }
    return out;
}

}  // namespace ggdiff
