// Base64 for images in JSON bodies (standard alphabet; decoding also takes the URL-safe one,
// whitespace, missing padding and a "data:image/...;base64," prefix).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ggdiff::server {

std::string base64_encode(const uint8_t* data, size_t size);

// nullopt for invalid text; `error` then says what is wrong and where.
std::optional<std::vector<uint8_t>> base64_decode(std::string_view text, std::string* error);

}  // namespace ggdiff::server
