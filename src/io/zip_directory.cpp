// Zip archive layout (APPNOTE): local header + data per entry, then the central directory,
// then (ZIP64) the zip64 end record and its locator, then the end-of-central-directory record
// with an optional comment of at most 64 KiB.
#include "io/zip_directory.h"

#include <algorithm>
#include <cstring>
#include <unordered_set>

#include "core/checked_math.h"
#include "core/log.h"
#include "core/safe_text.h"

namespace ggdiff {

namespace {

constexpr uint32_t kLocalSig = 0x04034b50;
constexpr uint32_t kCentralSig = 0x02014b50;
constexpr uint32_t kEndSig = 0x06054b50;
constexpr uint32_t kEnd64Sig = 0x06064b50;
constexpr uint32_t kLocator64Sig = 0x07064b50;
constexpr uint64_t kLocalFixed = 30, kCentralFixed = 46, kEndFixed = 22, kLocatorSize = 20;
constexpr uint64_t kEnd64Fixed = 56;

uint16_t u16(const uint8_t* p) {
    return static_cast<uint16_t>(p[0] | (p[1] << 8));
}
uint32_t u32(const uint8_t* p) {
    return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
           (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}
uint64_t u64(const uint8_t* p) {
    return static_cast<uint64_t>(u32(p)) | (static_cast<uint64_t>(u32(p + 4)) << 32);
}

std::string method_name(uint16_t method) {
    switch (method) {
        case 8:
            return "deflated";
        case 9:
            return "deflate64-compressed";
        case 12:
            return "bzip2-compressed";
        case 14:
            return "LZMA-compressed";
        case 93:
            return "zstd-compressed";
        default:
            return string_format("compressed with method %u", method);
    }
}

// The end-of-central-directory record: the last signature whose comment length reaches
// exactly the end of the file.
bool find_end_record(const uint8_t* data, uint64_t size, uint64_t* pos) {
    if (size < kEndFixed) return false;
    const uint64_t last = size - kEndFixed;
    const uint64_t first = last > 0xffff ? last - 0xffff : 0;
    for (uint64_t p = last + 1; p-- > first;) {
        if (u32(data + p) == kEndSig && p + kEndFixed + u16(data + p + 20) == size) {
            *pos = p;
            return true;
        }
    }
    return false;
}

// The ZIP64 extended-information extra field replaces the 32-bit fields that hold all ones.
Status apply_zip64_extra(const uint8_t* extra, uint64_t n, ZipEntry* e, bool need_size,
                         bool need_csize, bool need_offset) {
    uint64_t i = 0;
    while (i + 4 <= n) {
        const uint16_t id = u16(extra + i), len = u16(extra + i + 2);
        if (i + 4 + len > n) break;
        if (id == 0x0001) {
            const uint8_t* f = extra + i + 4;
            uint64_t at = 0;
            auto take = [&](uint64_t* out) {
                if (at + 8 > len) return false;
                *out = u64(f + at);
                at += 8;
                return true;
            };
            if ((need_size && !take(&e->size)) || (need_csize && !take(&e->compressed_size)) ||
                (need_offset && !take(&e->header_offset))) {
                return Status::Error("zip entry " + quote_name(e->name) +
                                     ": its ZIP64 extra field is too short");
            }
            return Status::Ok();
        }
        i += 4 + len;
    }
    if (need_size || need_csize || need_offset) {
        return Status::Error("zip entry " + quote_name(e->name) +
                             " has 32-bit sizes marked as ZIP64 but no ZIP64 extra field");
    }
    return Status::Ok();
}

}  // namespace

const ZipEntry* ZipDirectory::find(const std::string& name) const {
    for (const ZipEntry& e : entries) {
        if (e.name == name) return &e;
    }
    return nullptr;
}

Status check_zip_entry_stored(const ZipEntry& e) {
    if (e.stored()) return Status::Ok();
    return Status::Error("zip entry " + quote_name(e.name) + " is " + method_name(e.method) +
                         "; ggdiff reads PyTorch files in place and only from stored "
                         "(uncompressed) entries, as torch.save writes them: re-save it with "
                         "torch.save or unzip and re-zip it with -0");
}

Result<ZipDirectory> read_zip_directory(const uint8_t* data, uint64_t size) {
    uint64_t end_pos = 0;
    if (!find_end_record(data, size, &end_pos)) {
        return Status::Error(
            "zip archive has no end-of-central-directory record: truncated or not a zip file");
    }
    const uint8_t* end = data + end_pos;
    uint64_t disk = u16(end + 4), cd_disk = u16(end + 6);
    uint64_t count_here = u16(end + 8), count = u16(end + 10);
    uint64_t cd_size = u32(end + 12), cd_offset = u32(end + 16);
    uint64_t cd_limit = end_pos;  // the directory ends before the end records

    if (end_pos >= kLocatorSize && u32(data + end_pos - kLocatorSize) == kLocator64Sig) {
        const uint8_t* loc = data + end_pos - kLocatorSize;
        const uint64_t e64 = u64(loc + 8);
        if (u32(loc + 4) != 0 || u32(loc + 16) > 1) {
            return Status::Error("zip archive spans several disks (split archives are not read)");
        }
        if (e64 > end_pos - kLocatorSize || end_pos - kLocatorSize - e64 < kEnd64Fixed ||
            u32(data + e64) != kEnd64Sig) {
            return Status::Error(
                "zip archive's ZIP64 end record lies outside the file or is "
                "not where its locator points");
        }
        const uint8_t* r = data + e64;
        disk = u32(r + 16);
        cd_disk = u32(r + 20);
        count_here = u64(r + 24);
        count = u64(r + 32);
        cd_size = u64(r + 40);
        cd_offset = u64(r + 48);
        cd_limit = e64;
    }
    if (disk != 0 || cd_disk != 0 || count_here != count) {
        return Status::Error("zip archive spans several disks (split archives are not read)");
    }
    uint64_t cd_end = 0;
    if (!checked_add(cd_offset, cd_size, &cd_end) || cd_end > cd_limit) {
        return Status::Error(string_format(
            "zip archive's central directory (%llu bytes at %llu) lies outside the file "
            "(%llu bytes): truncated or corrupt",
            (unsigned long long)cd_size, (unsigned long long)cd_offset, (unsigned long long)size));
    }
    if (count > kMaxZipEntries || count > cd_size / kCentralFixed) {
        return Status::Error(string_format(
            "zip archive claims %llu entries in a %llu-byte central directory (limit %llu)",
            (unsigned long long)count, (unsigned long long)cd_size,
            (unsigned long long)kMaxZipEntries));
    }

    ZipDirectory dir;
    dir.entries.reserve(count);
    std::unordered_set<std::string> names;
    uint64_t p = cd_offset;
    for (uint64_t i = 0; i < count; ++i) {
        if (cd_end - p < kCentralFixed || u32(data + p) != kCentralSig) {
            return Status::Error(string_format(
                "zip central directory entry %llu is damaged (no signature at byte %llu)",
                (unsigned long long)i, (unsigned long long)p));
        }
        const uint8_t* c = data + p;
        const uint64_t name_len = u16(c + 28), extra_len = u16(c + 30), comment_len = u16(c + 32);
        if (cd_end - p - kCentralFixed < name_len + extra_len + comment_len) {
            return Status::Error(string_format(
                "zip central directory entry %llu runs past the directory", (unsigned long long)i));
        }
        ZipEntry e;
        e.name.assign(reinterpret_cast<const char*>(c + kCentralFixed), name_len);
        e.flags = u16(c + 8);
        e.method = u16(c + 10);
        e.compressed_size = u32(c + 20);
        e.size = u32(c + 24);
        e.header_offset = u32(c + 42);
        const uint16_t start_disk = u16(c + 34);
        GGDIFF_TRY(apply_zip64_extra(c + kCentralFixed + name_len, extra_len, &e,
                                     e.size == 0xffffffffu, e.compressed_size == 0xffffffffu,
                                     e.header_offset == 0xffffffffu));
        if (start_disk != 0 && start_disk != 0xffff) {
            return Status::Error("zip entry " + quote_name(e.name) + " is on another disk");
        }
        if (e.flags & 1) {
            return Status::Error("zip entry " + quote_name(e.name) + " is encrypted");
        }
        if (e.stored() && e.size != e.compressed_size) {
            return Status::Error(string_format(
                "zip entry %s is stored but claims %llu bytes unpacked and %llu packed",
                quote_name(e.name).c_str(), (unsigned long long)e.size,
                (unsigned long long)e.compressed_size));
        }
        if (!names.insert(e.name).second) {
            return Status::Error("zip archive has two entries named " + quote_name(e.name));
        }

        // The local header must lie before the directory and agree with it on the name; the
        // data follows its own (possibly longer, aligning) extra field.
        const uint64_t h = e.header_offset;
        if (h > cd_offset || cd_offset - h < kLocalFixed || u32(data + h) != kLocalSig) {
            return Status::Error(string_format(
                "zip entry %s: no local header at byte %llu (outside the archive's data or "
                "damaged)",
                quote_name(e.name).c_str(), (unsigned long long)h));
        }
        const uint64_t local_name = u16(data + h + 26), local_extra = u16(data + h + 28);
        e.data_offset = h + kLocalFixed + local_name + local_extra;
        if (local_name != name_len ||
            (cd_offset - h - kLocalFixed >= local_name &&
             std::memcmp(data + h + kLocalFixed, e.name.data(), name_len) != 0)) {
            return Status::Error("zip entry " + quote_name(e.name) +
                                 ": its local header names another file");
        }
        uint64_t data_end = 0;
        if (!checked_add(e.data_offset, e.compressed_size, &data_end) || data_end > cd_offset) {
            return Status::Error(string_format(
                "zip entry %s (%llu bytes at %llu) runs past the archive's data into its "
                "directory or past the end of the file",
                quote_name(e.name).c_str(), (unsigned long long)e.compressed_size,
                (unsigned long long)e.data_offset));
        }
        dir.entries.push_back(std::move(e));
        p += kCentralFixed + name_len + extra_len + comment_len;
    }

    // No two entries may share bytes (overlapping entries are how small zip bombs repeat
    // one compressed stream); header through data, in file order.
    std::vector<const ZipEntry*> order;
    order.reserve(dir.entries.size());
    for (const ZipEntry& e : dir.entries) order.push_back(&e);
    std::sort(order.begin(), order.end(), [](const ZipEntry* a, const ZipEntry* b) {
        return a->header_offset < b->header_offset;
    });
    for (size_t i = 1; i < order.size(); ++i) {
        const ZipEntry& a = *order[i - 1];
        if (order[i]->header_offset < a.data_offset + a.compressed_size) {
            return Status::Error("zip entries " + quote_name(a.name) + " and " +
                                 quote_name(order[i]->name) + " overlap");
        }
    }
    return dir;
}

}  // namespace ggdiff
