// Whole-file reads with a size limit, for every file a user or a download hands us (images,
// tokenizer files, JSON side files): a huge file, a FIFO or /dev/zero is refused once the limit
// is passed instead of filling memory. Atomic whole-file writes are core/output_file.h's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace ggdiff {

// Reads a whole file. Errors (no path prefix; callers add context): the OS error for a
// missing or unreadable file, "is a directory", "file is empty", and "file is too large"
// when it exceeds max_bytes (checked from the size up front and again while reading, so an
// endless stream stops at the limit).
Result<std::vector<uint8_t>> read_file_bytes(const std::string& path, uint64_t max_bytes);

// read_file_bytes as text, with the path (escaped) in front of any error:
// "cannot read '/dev/zero': file is too large (limit 67108864 bytes)".
Result<std::string> read_text_file(const std::string& path, uint64_t max_bytes);

// Ok when the JSON text nests arrays and objects at most `max_depth` deep (brackets inside
// strings do not count). Linear, and run before a parser that would build the tree: deeper
// trees are copied and printed recursively by JSON libraries, which overflows the stack.
Status check_json_nesting(std::string_view text, int max_depth);

}  // namespace ggdiff
