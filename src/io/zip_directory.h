// The directory of a zip archive read in place (PyTorch checkpoints are zip archives): every
// entry's name, compression method and byte range in the file. Nothing is decompressed, so a
// zip bomb has nothing to expand; only stored entries can be used in place.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace ggdiff {

struct ZipEntry {
    std::string name;
    uint16_t method = 0;  // 0 stored, 8 deflated, ...
    uint16_t flags = 0;   // general purpose bits (bit 0: encrypted)
    uint64_t compressed_size = 0;
    uint64_t size = 0;           // uncompressed
    uint64_t header_offset = 0;  // the entry's local header
    uint64_t data_offset = 0;    // its first data byte (local header + name + extra field)

    bool stored() const { return method == 0; }
};

struct ZipDirectory {
    std::vector<ZipEntry> entries;  // central directory order
    // The entry of that exact name, or nullptr.
    const ZipEntry* find(const std::string& name) const;
};

// Limits on what an archive may claim; archives past them are refused.
constexpr uint64_t kMaxZipEntries = 1u << 20;

// Reads the end-of-central-directory record (ZIP64 too), the central directory and each
// entry's local header from the whole file's bytes, never reading outside them. Refused with a
// message naming the entry: split (multi-disk) archives, entries or a directory that lie
// outside the file or overlap each other or the directory, local headers that disagree with
// the directory, encrypted entries, stored entries whose two sizes differ, duplicate names.
Result<ZipDirectory> read_zip_directory(const uint8_t* data, uint64_t size);

// The data of a stored entry: an error naming the entry and its method when it is compressed
// ("deflated": PyTorch writes stored entries; a re-zipped checkpoint must be unpacked first).
Status check_zip_entry_stored(const ZipEntry& entry);

}  // namespace ggdiff
