// Per-format encoders and decoders behind image_io.h (internal to src/image).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "image/image.h"

namespace ggdiff::codec {

// Decoders return 8-bit RGB (3 channels) or RGBA (4 channels). They check the dimensions
// against kMaxImageSide and max_pixels before allocating pixel memory.
Result<Image> decode_png(const uint8_t* data, size_t size, int64_t max_pixels);
Result<Image> decode_jpeg(const uint8_t* data, size_t size, int64_t max_pixels);
Result<Image> decode_webp(const uint8_t* data, size_t size, int64_t max_pixels);

// Encoders take a valid image with 1..4 channels. `parameters` (A1111 infotext) is
// embedded when non-empty: PNG tEXt/iTXt "parameters", JPEG EXIF UserComment (or COM
// segments when too long for one APP1 segment), WebP EXIF chunk.
Result<std::vector<uint8_t>> encode_png(const Image& image, int compression_level,
                                        const std::string& parameters);
Result<std::vector<uint8_t>> encode_jpeg(const Image& image, int quality,
                                         const std::string& parameters);
Result<std::vector<uint8_t>> encode_webp(const Image& image, int quality, bool lossless,
                                         const std::string& parameters);

}  // namespace ggdiff::codec
