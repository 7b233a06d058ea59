// Whole-file reads with clear errors; atomic whole-file writes (temp file, fsync, rename) are
// core/output_file.h's write_file_atomic.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/output_file.h"
#include "core/status.h"

namespace ggdiff {

// Reads a whole file. Errors (no path prefix; callers add context): the OS error for a
// missing or unreadable file, "is a directory", "file is empty", and "file is too large"
// when it exceeds max_bytes.
Result<std::vector<uint8_t>> read_file_bytes(const std::string& path, uint64_t max_bytes);

}  // namespace ggdiff
