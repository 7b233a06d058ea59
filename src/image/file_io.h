// Whole-file reads with clear errors, and atomic whole-file writes (temp file, fsync, rename).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace ggdiff {

// Reads a whole file. Errors (no path prefix; callers add context): the OS error for a
// missing or unreadable file, "is a directory", "file is empty", and "file is too large"
// when it exceeds max_bytes.
Result<std::vector<uint8_t>> read_file_bytes(const std::string& path, uint64_t max_bytes);

// Writes `size` bytes to `path` atomically: a temporary file in the same directory is
// written, fsynced and renamed over `path`, and the directory is fsynced. On any failure
// the temporary file is removed and an existing `path` is left untouched.
Status write_file_atomic(const std::string& path, const uint8_t* data, size_t size);

}  // namespace ggdiff
