// Reading and writing image files (PNG, JPEG, WebP) and their in-memory encodings.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "image/image.h"
#include "image/image_format.h"

namespace ggdiff {

// Largest encoded image file read_image / read_image_parameters accept.
constexpr uint64_t kMaxImageFileBytes = 1ull << 30;

struct ImageWriteOptions {
    int quality = 90;         // JPEG and lossy WebP, 1..100
    bool lossless = false;    // WebP only: lossless (pixel-exact) encoding
    int png_compression = 6;  // zlib level 0..9
    std::string parameters;   // A1111 infotext to embed; empty = none
};

// Decodes PNG, JPEG or WebP, recognized by magic bytes (not by any name). The result is
// 8-bit RGB (3 channels) or RGBA (4, when the file has alpha or PNG transparency): grey,
// palette and 16-bit PNGs are converted. Images of more than max_pixels (at most
// kMaxImagePixels) are refused before allocating: a server can pass its own, smaller limit.
Result<Image> decode_image(const uint8_t* data, size_t size, int64_t max_pixels = kMaxImagePixels);
Result<Image> decode_image(const std::vector<uint8_t>& data);

// read_image = read the file + decode_image; errors name the path.
Result<Image> read_image(const std::string& path);

// Encodes an image with 1..4 channels. JPEG drops alpha; WebP expands grey to RGB.
Result<std::vector<uint8_t>> encode_image(const Image& image, ImageFormat format,
                                          const ImageWriteOptions& options = {});

// Writes `path` atomically with the format its extension names (.png, .jpg, .jpeg, .webp;
// anything else is an error naming it). Nothing is left behind on failure, and an existing
// file is replaced only by a complete new one.
Status write_image(const std::string& path, const Image& image,
                   const ImageWriteOptions& options = {});

// What write_image would refuse about `path` before any image exists: an unknown extension,
// and every target core/output_file.h refuses (a folder, a device or other special file, a
// dangling symbolic link, a missing or read-only folder). Front ends call it before generating.
Status check_image_output_path(const std::string& path);

}  // namespace ggdiff
