// Reading the A1111 "parameters" text (infotext) back from image files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "core/status.h"

namespace ggdiff {

// Finds the parameters text without decoding pixels, as UTF-8:
//  PNG:  tEXt, zTXt or iTXt (compressed or not) chunk with keyword "parameters";
//  JPEG: EXIF UserComment (APP1), else COM segments (concatenated);
//  WebP: EXIF chunk UserComment (animated ones too);
//  AVI (-M vid_gen's MJPEG videos): the LIST INFO ICMT chunk.
// nullopt when the image carries none; an error for data that is not a PNG/JPEG/WebP or
// whose structure is broken before the text is found.
Result<std::optional<std::string>> decode_image_parameters(const uint8_t* data, size_t size);

// decode_image_parameters on a file; a file without parameters is an error too
// ("... has no 'parameters' metadata"). Errors name the path.
Result<std::string> read_image_parameters(const std::string& path);

}  // namespace ggdiff
