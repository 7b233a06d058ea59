// A bounds-checked GGUF header parser of our own, used only when ggml's reader rejects a
// file because of tensor names of GGML_MAX_NAME (64) bytes or more, as written by tools
// built with a larger limit (stable-diffusion.cpp's convert names SD tensors in full).
#include <ggml.h>

#include <cstring>

#include "core/log.h"
#include "io/checkpoint_file.h"
#include "io/mapped_file.h"

namespace ggdiff {

namespace {

// GGUF value types (gguf.h's enum gguf_type).
enum : uint32_t {
    kU8,
    kI8,
    kU16,
    kI16,
    kU32,
    kI32,
    kF32,
    kBool,
    kString,
    kArray,
    kU64,
    kI64,
    kF64,
    kTypeCount
};

class Cursor {
  public:
    Cursor(const uint8_t* data, uint64_t size) : p_(data), size_(size) {}
    uint64_t pos() const { return pos_; }
    bool ok() const { return ok_; }

    template <class T>
    T get() {
        T v{};
        if (!need(sizeof(T))) return v;
        std::memcpy(&v, p_ + pos_, sizeof(T));
        pos_ += sizeof(T);
        return v;
    }
    std::string str() {
        const uint64_t n = get<uint64_t>();
        if (!need(n)) return {};
        std::string s(reinterpret_cast<const char*>(p_ + pos_), n);
        pos_ += n;
        return s;
    }
    void skip(uint64_t n) {
        if (need(n)) pos_ += n;
    }

  private:
    bool need(uint64_t n) {
        if (!ok_ || n > size_ - pos_) ok_ = false;
        return ok_;
    }
    const uint8_t* p_;
    uint64_t size_;
    uint64_t pos_ = 0;
    bool ok_ = true;
};

uint64_t scalar_size(uint32_t type) {
    switch (type) {
        case kU8:
        case kI8:
        case kBool:
            return 1;
        case kU16:
        case kI16:
            return 2;
        case kU32:
        case kI32:
        case kF32:
            return 4;
        case kU64:
        case kI64:
        case kF64:
            return 8;
        default:
            return 0;
    }
}

std::string scalar_string(Cursor& c, uint32_t type) {
    switch (type) {
        case kU8:
            return std::to_string(c.get<uint8_t>());
        case kI8:
            return std::to_string(c.get<int8_t>());
        case kBool:
            return c.get<uint8_t>() ? "true" : "false";
        case kU16:
            return std::to_string(c.get<uint16_t>());
        case kI16:
            return std::to_string(c.get<int16_t>());
        case kU32:
            return std::to_string(c.get<uint32_t>());
        case kI32:
            return std::to_string(c.get<int32_t>());
        case kF32:
            return string_format("%g", c.get<float>());
        case kU64:
            return std::to_string(c.get<uint64_t>());
        case kI64:
            return std::to_string(c.get<int64_t>());
        case kF64:
            return string_format("%g", c.get<double>());
        default:
            return {};
    }
}

}  // namespace

Result<CheckpointHeader> read_gguf_header_direct(const MappedFile& file) {
    Cursor c(file.data(), file.size());
    auto bad = [](const std::string& why) { return Status::Error("corrupt GGUF header: " + why); };
    if (file.size() < 24 || std::memcmp(file.data(), "GGUF", 4) != 0) return bad("bad magic");
    c.skip(4);
    const uint32_t version = c.get<uint32_t>();
    if (version < 2 || version > 3) return bad("unsupported version " + std::to_string(version));
    const uint64_t n_tensors = c.get<uint64_t>();
    const uint64_t n_kv = c.get<uint64_t>();
    // Every entry takes at least 8 bytes, which bounds the counts by the file size.
    if (!c.ok() || n_tensors > file.size() / 8 || n_kv > file.size() / 8) return bad("counts");

    CheckpointHeader out;
    out.format = "gguf";
    uint64_t alignment = 32;
    for (uint64_t i = 0; i < n_kv && c.ok(); ++i) {
        const std::string key = c.str();
        const uint32_t type = c.get<uint32_t>();
        if (key == "general.alignment") {
            // ggml reads it with an assertion on its type.
            if (type != kU32) return bad("general.alignment is not a u32");
            alignment = c.get<uint32_t>();
            out.metadata[key] = std::to_string(alignment);
        } else if (type == kString) {
            out.metadata[key] = c.str();
        } else if (type == kArray) {
            const uint32_t elem = c.get<uint32_t>();
            const uint64_t n = c.get<uint64_t>();
            if (elem == kString) {
                const bool keep = key.rfind("ggdiff.", 0) == 0;
                for (uint64_t j = 0; j < n && c.ok(); ++j) {
                    std::string v = c.str();
                    if (keep) out.tables[key].push_back(std::move(v));
                }
            } else {
                const uint64_t sz = scalar_size(elem);
                if (sz == 0 || n > file.size() / sz) return bad("array '" + key + "'");
                c.skip(n * sz);
            }
        } else if (scalar_size(type) != 0) {
            out.metadata[key] = scalar_string(c, type);
        } else {
            return bad("key '" + key + "' has unknown type " + std::to_string(type));
        }
    }
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) return bad("alignment");

    std::vector<uint64_t> rel_offsets;
    for (uint64_t i = 0; i < n_tensors && c.ok(); ++i) {
        StoredTensor t;
        t.name = c.str();
        const uint32_t n_dims = c.get<uint32_t>();
        if (n_dims > GGML_MAX_DIMS) return bad("tensor '" + t.name + "' has too many dims");
        std::vector<int64_t> ne;
        for (uint32_t d = 0; d < n_dims; ++d) {
            const int64_t v = c.get<int64_t>();
            if (v < 0 || v > (int64_t(1) << 48)) return bad("tensor '" + t.name + "' shape");
            ne.push_back(v);
        }
        t.ggml_type = c.get<int32_t>();
        rel_offsets.push_back(c.get<uint64_t>());
        if (!c.ok()) break;
        if (t.ggml_type < 0 || t.ggml_type >= GGML_TYPE_COUNT ||
            ggml_blck_size(static_cast<ggml_type>(t.ggml_type)) <= 0) {
            return bad("tensor '" + t.name + "' has invalid type " + std::to_string(t.ggml_type));
        }
        t.dtype = dtype_from_ggml(t.ggml_type);
        t.shape.assign(ne.rbegin(), ne.rend());
        out.tensors.push_back(std::move(t));
    }
    if (!c.ok()) return bad("truncated");
    const uint64_t data_start = (c.pos() + alignment - 1) / alignment * alignment;
    for (size_t i = 0; i < out.tensors.size(); ++i) {
        StoredTensor& t = out.tensors[i];
        uint64_t nbytes = 0;
        const auto type = static_cast<ggml_type>(t.ggml_type);
        const int64_t ne0 = t.shape.empty() ? 1 : t.shape.back();
        if (ne0 % ggml_blck_size(type) != 0) return bad("tensor '" + t.name + "' row size");
        uint64_t rows = 1;
        for (size_t d = 0; d + 1 < t.shape.size(); ++d) rows *= static_cast<uint64_t>(t.shape[d]);
        if (__builtin_mul_overflow(rows, ggml_row_size(type, ne0), &nbytes)) return bad("size");
        t.nbytes = nbytes;
        if (rel_offsets[i] % alignment != 0 || rel_offsets[i] > file.size() ||
            data_start > file.size() - rel_offsets[i] ||
            nbytes > file.size() - data_start - rel_offsets[i]) {
            return Status::Error("tensor '" + t.name +
                                 "': data runs past the end of the file (truncated GGUF?)");
        }
        t.offset = data_start + rel_offsets[i];
    }
    return out;
}

}  // namespace ggdiff
