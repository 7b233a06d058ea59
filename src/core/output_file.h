// Output files written safely: the target is checked before any work is spent on its content,
// and written through a temporary file that is renamed into place, so a failure never leaves a
// partial file and a device, folder or other special file is never replaced.
//
// Rules for an output path:
//  - it must name a file ("", ".", "..", and a trailing '/' are refused) in an existing,
//    writable folder;
//  - an existing regular file is replaced (the new file gets the umask's permissions);
//  - a symbolic link is followed deliberately: its final target must be a regular file, which
//    is replaced while the link stays; a dangling or looping link is refused;
//  - a folder, device, FIFO or socket (directly or as a link's target) is refused.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "core/status.h"

namespace ggdiff {

// The file an output path will write (the path itself, or a symlink's resolved target), or
// the reason it cannot be written. Touches nothing.
Result<std::string> resolve_output_target(const std::string& path);

// resolve_output_target without the result.
Status check_output_target(const std::string& path);

// One output file in the making. create() checks the target and opens a fresh temporary file
// next to it; commit() flushes, fsyncs, checks the target again and renames the temporary
// file over it. Destroying an uncommitted AtomicFile removes the temporary file.
class AtomicFile {
  public:
    static Result<std::unique_ptr<AtomicFile>> create(const std::string& path);
    ~AtomicFile();
    AtomicFile(const AtomicFile&) = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;

    Status write(const void* data, size_t size);
    Status commit();
    const std::string& path() const { return path_; }  // as given
    uint64_t bytes_written() const { return written_; }

  private:
    AtomicFile() = default;
    std::string path_;    // as given, for messages
    std::string target_;  // the file that is replaced
    std::string tmp_;
    int fd_ = -1;
    uint64_t written_ = 0;
    bool committed_ = false;
};

// Writes `size` bytes to `path` through an AtomicFile.
Status write_file_atomic(const std::string& path, const void* data, size_t size);

}  // namespace ggdiff
