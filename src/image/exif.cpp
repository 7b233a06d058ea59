#include "image/exif.h"

#include <cstring>

#include "image/text_encoding.h"

namespace ggdiff {

namespace {

constexpr uint16_t kTagExifIfd = 0x8769;
constexpr uint16_t kTagExifVersion = 0x9000;
constexpr uint16_t kTagUserComment = 0x9286;
constexpr uint16_t kTypeLong = 4;
constexpr uint16_t kTypeUndefined = 7;

void put16(std::vector<uint8_t>& v, uint32_t x) {
    v.push_back(static_cast<uint8_t>(x >> 8));
    v.push_back(static_cast<uint8_t>(x));
}
void put32(std::vector<uint8_t>& v, uint32_t x) {
    put16(v, x >> 16);
    put16(v, x & 0xFFFF);
}

struct TiffReader {
    const uint8_t* p;
    size_t n;
    bool be;
    bool ok(size_t off, size_t len) const { return off <= n && len <= n - off; }
    uint32_t u16(size_t off) const {
        return be ? (uint32_t(p[off]) << 8 | p[off + 1]) : (uint32_t(p[off + 1]) << 8 | p[off]);
    }
    uint32_t u32(size_t off) const {
        return be ? (u16(off) << 16 | u16(off + 2)) : (u16(off + 2) << 16 | u16(off));
    }
};

// Finds `tag` in the IFD at `ifd`; fills the entry offset. False when absent.
Result<bool> find_tag(const TiffReader& r, size_t ifd, uint16_t tag, size_t& entry) {
    if (!r.ok(ifd, 2)) return Status::Error("EXIF IFD offset out of range");
    const size_t count = r.u16(ifd);
    if (!r.ok(ifd + 2, count * 12)) return Status::Error("EXIF IFD entries out of range");
    for (size_t i = 0; i < count; ++i) {
        const size_t e = ifd + 2 + i * 12;
        if (r.u16(e) == tag) {
            entry = e;
            return true;
        }
    }
    return false;
}

std::string strip_trailing_nuls(std::string s) {
    while (!s.empty() && s.back() == '\0') s.pop_back();
    return s;
}

}  // namespace

std::vector<uint8_t> make_exif_user_comment(const std::string& utf8_text) {
    std::vector<uint8_t> comment = {'U', 'N', 'I', 'C', 'O', 'D', 'E', 0};
    const std::vector<uint8_t> utf16 = utf8_to_utf16(utf8_text, /*big_endian=*/true);
    comment.insert(comment.end(), utf16.begin(), utf16.end());

    const uint32_t ifd0 = 8;
    const uint32_t exif_ifd = ifd0 + 2 + 12 + 4;
    const uint32_t comment_off = exif_ifd + 2 + 2 * 12 + 4;
    std::vector<uint8_t> v = {'M', 'M', 0, 42};
    put32(v, ifd0);
    put16(v, 1);  // IFD0: one entry, the Exif IFD pointer
    put16(v, kTagExifIfd), put16(v, kTypeLong), put32(v, 1), put32(v, exif_ifd);
    put32(v, 0);
    put16(v, 2);  // Exif IFD: ExifVersion, UserComment (ascending tags)
    put16(v, kTagExifVersion), put16(v, kTypeUndefined), put32(v, 4);
    v.insert(v.end(), {'0', '2', '3', '0'});
    put16(v, kTagUserComment), put16(v, kTypeUndefined);
    put32(v, static_cast<uint32_t>(comment.size())), put32(v, comment_off);
    put32(v, 0);
    v.insert(v.end(), comment.begin(), comment.end());
    return v;
}

Result<std::optional<std::string>> exif_user_comment(const uint8_t* data, size_t size) {
    if (size >= 6 && std::memcmp(data, "Exif\0\0", 6) == 0) data += 6, size -= 6;
    if (size < 8) return Status::Error("EXIF block too short");
    TiffReader r{data, size, false};
    if (std::memcmp(data, "MM\0*", 4) == 0) {
        r.be = true;
    } else if (std::memcmp(data, "II*\0", 4) != 0) {
        return Status::Error("EXIF block has no TIFF header");
    }
    size_t entry = 0;
    Result<bool> found = find_tag(r, r.u32(4), kTagExifIfd, entry);
    if (!found.ok()) return found.status();
    if (!*found) return std::optional<std::string>();
    found = find_tag(r, r.u32(entry + 8), kTagUserComment, entry);
    if (!found.ok()) return found.status();
    if (!*found) return std::optional<std::string>();
    const size_t count = r.u32(entry + 4);
    const size_t off = count <= 4 ? entry + 8 : r.u32(entry + 8);
    if (!r.ok(off, count)) return Status::Error("EXIF UserComment out of range");
    if (count < 8) return std::optional<std::string>(std::string());
    const uint8_t* c = data + off;
    const uint8_t* text = c + 8;
    size_t len = count - 8;
    if (std::memcmp(c, "UNICODE\0", 8) == 0) {
        bool be = r.be;
        if (len >= 2 && text[0] == 0xFE && text[1] == 0xFF)
            be = true, text += 2, len -= 2;
        else if (len >= 2 && text[0] == 0xFF && text[1] == 0xFE)
            be = false, text += 2, len -= 2;
        return std::optional<std::string>(strip_trailing_nuls(utf16_to_utf8(text, len, be)));
    }
    std::string raw(reinterpret_cast<const char*>(text), len);
    return std::optional<std::string>(strip_trailing_nuls(bytes_to_utf8(raw)));
}

}  // namespace ggdiff
