// A read-only memory map of a whole file. Pages are read on first touch, so mapping a
// large checkpoint and parsing its header costs almost nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"

namespace ggdiff {

class MappedFile {
  public:
    // Fails with a clear message for missing files, directories, empty files and
    // anything mmap refuses.
    static Result<std::unique_ptr<MappedFile>> open(const std::string& path);
    ~MappedFile();
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    const uint8_t* data() const { return data_; }
    uint64_t size() const { return size_; }
    const std::string& path() const { return path_; }
    // Drops the pages wholly inside [offset, offset + n) from this process's memory;
    // they are read again from the file on the next access.
    void release(uint64_t offset, uint64_t n) const;

  private:
    MappedFile(std::string path, const uint8_t* data, uint64_t size)
        : path_(std::move(path)), data_(data), size_(size) {}
    std::string path_;
    const uint8_t* data_ = nullptr;
    uint64_t size_ = 0;
};

}  // namespace ggdiff
