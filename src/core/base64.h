// Base64 (RFC 4648): images in HTTP bodies, token bytes in Mistral's tekken.json.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace ggdiff {

// Standard alphabet with '=' padding.
std::string base64_encode(const uint8_t* data, size_t size);
std::string base64_encode(const std::vector<uint8_t>& data);

// Accepts the standard and the URL-safe alphabet, ASCII whitespace anywhere, missing
// padding, and a leading data URL header ("data:image/png;base64,"). Errors name the first
// bad character and its offset, or say the input is truncated.
Result<std::vector<uint8_t>> base64_decode(std::string_view text);

}  // namespace ggdiff
