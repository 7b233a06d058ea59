// Conversions between the text encodings image metadata uses (UTF-8, Latin-1, UTF-16).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ggdiff {

bool is_valid_utf8(const std::string& s);
bool is_ascii(const std::string& s);

// Latin-1 (ISO 8859-1) bytes to UTF-8.
std::string latin1_to_utf8(const std::string& s);

// Bytes of unknown encoding to UTF-8: valid UTF-8 is kept, anything else is taken as Latin-1
// (what PNG tEXt specifies, though many writers put UTF-8 there).
std::string bytes_to_utf8(const std::string& s);

// UTF-8 to UTF-16 code units serialized big- or little-endian. Invalid UTF-8 bytes become
// U+FFFD.
std::vector<uint8_t> utf8_to_utf16(const std::string& s, bool big_endian);

// UTF-16 bytes to UTF-8; an odd trailing byte is ignored, lone surrogates become U+FFFD.
std::string utf16_to_utf8(const uint8_t* data, size_t size, bool big_endian);

}  // namespace ggdiff
