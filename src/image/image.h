// An 8-bit raster image (row-major, interleaved channels) and its size limits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/status.h"

namespace ggdiff {

// Decoders refuse larger images before allocating any pixel memory.
constexpr int kMaxImageSide = 16384;
constexpr int64_t kMaxImagePixels = 256'000'000;

struct Image {
    int width = 0;
    int height = 0;
    int channels = 0;             // 1 grey, 2 grey+alpha, 3 RGB, 4 RGBA
    std::vector<uint8_t> pixels;  // row-major, interleaved, width * channels bytes per row

    size_t row_bytes() const { return static_cast<size_t>(width) * static_cast<size_t>(channels); }
    size_t byte_size() const { return row_bytes() * static_cast<size_t>(height); }
    bool empty() const { return width <= 0 || height <= 0 || channels <= 0; }
};

// Ok when 0 < width, height <= kMaxImageSide and width * height <= max_pixels (at most
// kMaxImagePixels).
Status check_image_dimensions(int64_t width, int64_t height, int64_t max_pixels = kMaxImagePixels);

// Ok when the dimensions pass check_image_dimensions, channels is 1..4 and the pixel buffer
// holds exactly width * height * channels bytes.
Status validate_image(const Image& image);

// Converts between 1 (grey), 2 (grey+alpha), 3 (RGB) and 4 (RGBA) channels: grey is
// replicated, RGB becomes grey by Rec. 601 luma, a missing alpha becomes opaque, a dropped
// alpha is discarded. `image` must be valid.
Image convert_channels(const Image& image, int channels);

}  // namespace ggdiff
