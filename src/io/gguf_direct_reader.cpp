// A bounds-checked GGUF header parser of our own. Every count, length and offset is checked
// against the bytes that remain before it is used, every size is overflow-checked, and keys
// and tensor names are unique (and pass check_checkpoint_header). It reads tensor names of any
// length (stable-diffusion.cpp's convert writes SD names in full, past ggml's 63 bytes).
#include <ggml.h>

#include <cstdint>
#include <cstring>
#include <set>

#include "core/checked_math.h"
#include "core/log.h"
#include "core/safe_text.h"
#include "io/checkpoint_file.h"

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
    uint64_t remaining() const { return size_ - pos_; }
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

// An integer (or bool) scalar widened to int64; u64 values past int64 saturate.
int64_t scalar_int(Cursor& c, uint32_t type) {
    switch (type) {
        case kU8:
        case kBool:
            return c.get<uint8_t>();
        case kI8:
            return c.get<int8_t>();
        case kU16:
            return c.get<uint16_t>();
        case kI16:
            return c.get<int16_t>();
        case kU32:
            return c.get<uint32_t>();
        case kI32:
            return c.get<int32_t>();
        case kU64: {
            const uint64_t v = c.get<uint64_t>();
            return v > uint64_t(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(v);
        }
        case kI64:
            return c.get<int64_t>();
        default:
            return 0;
    }
}

// The header; with `arrays`, the arrays under `prefix` are kept there as well.
Result<CheckpointHeader> read_direct(const uint8_t* data, uint64_t size, const std::string& prefix,
                                     GgufArrays* arrays) {
    Cursor c(data, size);
    auto bad = [](const std::string& why) { return Status::Error("corrupt GGUF header: " + why); };
    if (size < 24 || std::memcmp(data, "GGUF", 4) != 0) return bad("bad magic");
    c.skip(4);
    const uint32_t version = c.get<uint32_t>();
    if (version < 2 || version > 3) return bad("unsupported version " + std::to_string(version));
    const uint64_t n_tensors = c.get<uint64_t>();
    const uint64_t n_kv = c.get<uint64_t>();
    // A KV takes at least 13 bytes and a tensor entry 24, which bounds the counts.
    if (!c.ok() || n_tensors > size / 24 || n_kv > size / 13) {
        return bad(string_format("%llu tensors and %llu keys cannot fit in %llu bytes",
                                 (unsigned long long)n_tensors, (unsigned long long)n_kv,
                                 (unsigned long long)size));
    }

    CheckpointHeader out;
    out.format = "gguf";
    uint64_t alignment = 32;
    std::set<std::string> keys;
    for (uint64_t i = 0; i < n_kv && c.ok(); ++i) {
        const std::string key = c.str();
        const uint32_t type = c.get<uint32_t>();
        if (!c.ok()) break;
        GGDIFF_TRY(check_name(key, "metadata key", kMaxMetadataKeyBytes).with_context("GGUF"));
        if (!keys.insert(key).second) return bad("key " + quote_name(key) + " appears twice");
        if (key == "general.alignment") {
            if (type != kU32) return bad("general.alignment is not a u32");
            alignment = c.get<uint32_t>();
            out.metadata[key] = std::to_string(alignment);
        } else if (type == kString) {
            out.metadata[key] = c.str();
        } else if (type == kArray) {
            const uint32_t elem = c.get<uint32_t>();
            const uint64_t n = c.get<uint64_t>();
            if (!c.ok()) break;
            const bool wanted = arrays && key.rfind(prefix, 0) == 0;
            if (elem == kString) {
                if (n > c.remaining() / 8) return bad("array " + quote_name(key) + " length");
                const bool keep = key.rfind("ggdiff.", 0) == 0;
                std::vector<std::string> values;
                for (uint64_t j = 0; j < n && c.ok(); ++j) {
                    std::string v = c.str();
                    if (keep || wanted) values.push_back(std::move(v));
                }
                if (wanted) arrays->strings[key] = values;
                if (keep) out.tables[key] = std::move(values);
            } else if (elem == kArray) {
                return bad("array " + quote_name(key) + " holds arrays");
            } else {
                const uint64_t sz = scalar_size(elem);
                if (sz == 0) {
                    return bad("array " + quote_name(key) + " has unknown element type " +
                               std::to_string(elem));
                }
                if (n > c.remaining() / sz) return bad("array " + quote_name(key) + " length");
                if (wanted && elem != kF32 && elem != kF64) {
                    std::vector<int64_t>& values = arrays->ints[key];
                    values.reserve(n);
                    for (uint64_t j = 0; j < n; ++j) values.push_back(scalar_int(c, elem));
                } else if (wanted) {
                    std::vector<float>& values = arrays->floats[key];
                    values.reserve(n);
                    for (uint64_t j = 0; j < n; ++j) {
                        values.push_back(elem == kF32 ? c.get<float>()
                                                      : static_cast<float>(c.get<double>()));
                    }
                } else {
                    c.skip(n * sz);
                }
            }
        } else if (scalar_size(type) != 0) {
            out.metadata[key] = scalar_string(c, type);
        } else {
            return bad("key " + quote_name(key) + " has unknown type " + std::to_string(type));
        }
    }
    if (!c.ok()) return bad("truncated in the metadata");
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
        return bad("alignment " + std::to_string(alignment) + " is not a power of two");
    }

    std::vector<uint64_t> rel_offsets;
    for (uint64_t i = 0; i < n_tensors && c.ok(); ++i) {
        StoredTensor t;
        t.name = c.str();
        const uint32_t n_dims = c.get<uint32_t>();
        if (!c.ok()) break;
        GGDIFF_TRY(check_name(t.name, "tensor name", kMaxTensorNameBytes).with_context("GGUF"));
        if (n_dims > GGML_MAX_DIMS) {
            return bad("tensor " + quote_name(t.name) + " has " + std::to_string(n_dims) +
                       " dimensions");
        }
        std::vector<int64_t> ne;
        for (uint32_t d = 0; d < n_dims; ++d) {
            const int64_t v = c.get<int64_t>();
            if (v < 0 || v > (int64_t(1) << 48)) {
                return bad("tensor " + quote_name(t.name) + " has dimension " + std::to_string(v));
            }
            ne.push_back(v);
        }
        t.ggml_type = c.get<int32_t>();
        rel_offsets.push_back(c.get<uint64_t>());
        if (!c.ok()) break;
        if (t.ggml_type < 0 || t.ggml_type >= GGML_TYPE_COUNT ||
            ggml_blck_size(static_cast<ggml_type>(t.ggml_type)) <= 0 ||
            ggml_type_size(static_cast<ggml_type>(t.ggml_type)) == 0) {
            return bad("tensor " + quote_name(t.name) + " has invalid type " +
                       std::to_string(t.ggml_type));
        }
        int64_t numel = 0;
        if (!checked_numel(ne, &numel)) return bad("tensor " + quote_name(t.name) + " size");
        // GGUF writers drop size-1 outer dimensions; some keep them. Read both the same way.
        while (ne.size() > 1 && ne.back() == 1) ne.pop_back();
        t.dtype = dtype_from_ggml(t.ggml_type);
        t.shape.assign(ne.rbegin(), ne.rend());
        out.tensors.push_back(std::move(t));
    }
    if (!c.ok()) return bad("truncated in the tensor list");
    GGDIFF_TRY(check_checkpoint_header(out).with_context("GGUF"));

    uint64_t data_start = 0;
    if (!checked_add(c.pos(), alignment - 1, &data_start)) return bad("data offset");
    data_start = data_start / alignment * alignment;
    for (size_t i = 0; i < out.tensors.size(); ++i) {
        StoredTensor& t = out.tensors[i];
        const auto type = static_cast<ggml_type>(t.ggml_type);
        const int64_t ne0 = t.shape.empty() ? 1 : t.shape.back();
        if (ne0 % ggml_blck_size(type) != 0) {
            return bad("tensor " + quote_name(t.name) + ": row length " + std::to_string(ne0) +
                       " is not a multiple of the " + ggml_type_name(type) + " block size");
        }
        uint64_t rows = 1, nbytes = 0;
        for (size_t d = 0; d + 1 < t.shape.size(); ++d) {
            if (!checked_mul(rows, static_cast<uint64_t>(t.shape[d]), &rows)) {
                return bad("tensor " + quote_name(t.name) + " size");
            }
        }
        if (!checked_mul(rows, ggml_row_size(type, ne0), &nbytes)) {
            return bad("tensor " + quote_name(t.name) + " size");
        }
        t.nbytes = nbytes;
        if (rel_offsets[i] % alignment != 0 || rel_offsets[i] > size ||
            data_start > size - rel_offsets[i] || nbytes > size - data_start - rel_offsets[i]) {
            return Status::Error("tensor " + quote_name(t.name) +
                                 ": data runs past the end of the file (truncated GGUF?)");
        }
        t.offset = data_start + rel_offsets[i];
    }
    return out;
}

}  // namespace

Result<CheckpointHeader> read_gguf_header_direct(const uint8_t* data, uint64_t size) {
    return read_direct(data, size, std::string(), nullptr);
}

Result<GgufArrays> read_gguf_arrays(const uint8_t* data, uint64_t size, const std::string& prefix) {
    GgufArrays arrays;
    auto header = read_direct(data, size, prefix, &arrays);
    if (!header.ok()) return header.status();
    arrays.values = std::move(header->metadata);
    return arrays;
}

}  // namespace ggdiff
