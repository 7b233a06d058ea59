// Small Unicode helpers: UTF-8 coding and the character classes the tokenizers split on.
#pragma once

#include <string>
#include <string_view>

namespace ggdiff::unicode {

// Decodes UTF-8; each byte of an invalid or truncated sequence becomes U+FFFD.
std::u32string decode_utf8(std::string_view text);
void append_utf8(std::string& out, char32_t cp);
std::string encode_utf8(std::u32string_view text);

bool is_letter(char32_t cp);       // \p{L}
bool is_number(char32_t cp);       // \p{N}
bool is_space(char32_t cp);        // \s (Unicode whitespace)
bool is_lowercase(char32_t cp);    // \p{Ll}
bool is_upper_title(char32_t cp);  // \p{Lu} or \p{Lt}
bool is_mark(char32_t cp);         // \p{M} (combining marks: not letters)
// Letters, numbers and '_': the characters a regex \b treats as word characters.
bool is_word_char(char32_t cp);

// Python's str.lower() (including U+0130 -> "i\u0307").
std::u32string to_lower(std::u32string_view text);

}  // namespace ggdiff::unicode
