#include "image/input_fit.h"

#include <stb_image_resize.h>

#include <algorithm>
#include <cstring>

namespace ggdiff {

Image fit_input_image(const Image& image, int width, int height) {
    if (image.width == width && image.height == height) return image;
    // The centre cut to the target's aspect (float arithmetic and truncation as sd-cli's).
    const float dst_aspect = static_cast<float>(width) / static_cast<float>(height);
    const float src_aspect = static_cast<float>(image.width) / static_cast<float>(image.height);
    int cx = 0, cy = 0, cw = image.width, ch = image.height;
    if (src_aspect > dst_aspect) {
        cw = std::max(1, static_cast<int>(static_cast<float>(image.height) * dst_aspect));
        cx = (image.width - cw) / 2;
    } else if (src_aspect < dst_aspect) {
        ch = std::max(1, static_cast<int>(static_cast<float>(image.width) / dst_aspect));
        cy = (image.height - ch) / 2;
    }
    const int c = image.channels;
    const size_t in_stride = static_cast<size_t>(image.width) * c;
    const uint8_t* src =
        image.pixels.data() + static_cast<size_t>(cy) * in_stride + static_cast<size_t>(cx) * c;
    Image out;
    out.width = width;
    out.height = height;
    out.channels = c;
    out.pixels.resize(static_cast<size_t>(width) * height * c);
    // Alpha (2 or 4 channels) is resized as the colour channels are: sd-cli reads inputs as
    // RGB, so it has none to treat otherwise.
    stbir_resize(src, cw, ch, static_cast<int>(in_stride), out.pixels.data(), width, height, 0,
                 STBIR_TYPE_UINT8, c, STBIR_ALPHA_CHANNEL_NONE, 0, STBIR_EDGE_CLAMP,
                 STBIR_EDGE_CLAMP, STBIR_FILTER_BOX, STBIR_FILTER_BOX, STBIR_COLORSPACE_SRGB,
                 nullptr);
    return out;
}

}  // namespace ggdiff
