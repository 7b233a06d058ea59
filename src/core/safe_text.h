// Text from files and users, made safe to show and to pass on: control bytes escaped in
// messages, names checked (UTF-8, no NUL or control characters, bounded length) before they
// reach libraries that treat them as C strings.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/status.h"

namespace ggdiff {

// True when `s` is well-formed UTF-8 (no overlong forms, surrogates or code points past
// U+10FFFF).
bool utf8_valid(std::string_view s);

// `s` for a one-line message: C0 controls, DEL and C1 controls (U+0080..U+009F) are written as
// \n, \r, \t or \xNN / \u0085, bytes that are not valid UTF-8 as \xNN; everything else is kept.
// Longer than `max_bytes` (0: no limit): cut at a character boundary and "..." appended.
std::string escape_text(std::string_view s, size_t max_bytes = 0);

// escape_text(s, 1024) in single quotes: 'name'. For names, keys and paths in messages.
std::string quote_name(std::string_view s);

// Like escape_text, but keeps '\n' and '\t' (for multi-line log output); the terminal still
// never receives an escape sequence or a bare carriage return.
std::string escape_log_text(std::string_view s);

// Ok for a name made of at most `max_bytes` bytes of valid UTF-8 with no control characters
// (C0, DEL, C1) and not empty. The error says what is wrong, naming `what` and the escaped
// name: "tensor name 'a\x00b' contains a control character (\x00 at byte 1)".
Status check_name(std::string_view name, const char* what, size_t max_bytes);

}  // namespace ggdiff
