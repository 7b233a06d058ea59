// A minimal EXIF (TIFF) block carrying a UserComment, as A1111 stores infotext in JPEG/WebP.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace ggdiff {

// A big-endian TIFF structure (no "Exif\0\0" prefix) with IFD0 -> Exif IFD holding
// ExifVersion and UserComment = "UNICODE\0" + UTF-16BE text (what piexif writes for A1111).
std::vector<uint8_t> make_exif_user_comment(const std::string& utf8_text);

// The UserComment of an EXIF block (with or without the "Exif\0\0" prefix), as UTF-8:
// UNICODE (UTF-16 in the block's byte order, BOM honoured), ASCII, or undefined (UTF-8 or
// Latin-1) encodings. nullopt when the block has no UserComment; an error when its
// structure is broken.
Result<std::optional<std::string>> exif_user_comment(const uint8_t* data, size_t size);

}  // namespace ggdiff
