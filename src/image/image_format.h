// The encoded image formats ggdiff reads and writes, and how to tell them apart.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "core/status.h"

namespace ggdiff {

enum class ImageFormat { Png, Jpeg, WebP };

const char* image_format_name(ImageFormat format);       // "png", "jpeg", "webp"
const char* image_format_mime_type(ImageFormat format);  // "image/png", ...
const char* image_format_extension(ImageFormat format);  // ".png", ".jpg", ".webp"

// By magic bytes: PNG signature, JPEG SOI + marker, RIFF....WEBP. nullopt otherwise.
std::optional<ImageFormat> detect_image_format(const uint8_t* data, size_t size);

// A short human description of unrecognized data for error messages, e.g.
// "GIF images are not supported" or "data starts with 3c 68 74 6d".
std::string describe_unknown_image_data(const uint8_t* data, size_t size);

// From the file extension, case-insensitive: .png, .jpg, .jpeg, .webp. Anything else is an
// error naming the extension.
// The format of encoded image bytes; an error for empty input or unknown data.
Result<ImageFormat> detect_image_format_or_error(const uint8_t* data, size_t size);

Result<ImageFormat> image_format_from_path(const std::string& path);

// From a format name as APIs spell it (output_format): png, jpg, jpeg, webp (any case).
Result<ImageFormat> parse_image_format(const std::string& name);

}  // namespace ggdiff
