// safetensors: u64 little-endian header length N, N bytes of JSON, then the data
// section. Each JSON entry gives dtype, shape and [begin, end) relative to the data.
#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/log.h"
#include "io/checkpoint_file.h"
#include "io/mapped_file.h"

namespace ggdiff {

namespace {

bool json_to_u64(const nlohmann::ordered_json& j, uint64_t* out) {
    if (j.is_number_unsigned()) {
        *out = j.get<uint64_t>();
        return true;
    }
    if (j.is_number_integer() && j.get<int64_t>() >= 0) {
        *out = static_cast<uint64_t>(j.get<int64_t>());
        return true;
    }
    return false;
}

Status parse_entry(const std::string& name, const nlohmann::ordered_json& e, uint64_t data_start,
                   uint64_t data_size, StoredTensor* t) {
    auto fail = [&](const std::string& what) {
        return Status::Error("tensor '" + name + "': " + what);
    };
    if (!e.is_object()) return fail("entry is not a JSON object");
    auto dt = e.find("dtype");
    auto sh = e.find("shape");
    auto off = e.find("data_offsets");
    if (dt == e.end() || !dt->is_string()) return fail("missing or non-string 'dtype'");
    if (sh == e.end() || !sh->is_array()) return fail("missing or non-array 'shape'");
    if (off == e.end() || !off->is_array() || off->size() != 2)
        return fail("'data_offsets' must be an array of two integers");

    t->name = name;
    const std::string dtype = dt->get<std::string>();
    if (!parse_dtype(dtype, &t->dtype)) return fail("unknown dtype '" + dtype + "'");
    t->ggml_type = dtype_to_ggml(t->dtype);

    uint64_t numel = 1;
    for (const auto& d : *sh) {
        uint64_t v = 0;
        if (!json_to_u64(d, &v) || v > (1ull << 48))
            return fail("shape entries must be non-negative integers");
        if (__builtin_mul_overflow(numel, v, &numel)) return fail("shape overflows");
        t->shape.push_back(static_cast<int64_t>(v));
    }
    uint64_t begin = 0, end = 0;
    if (!json_to_u64((*off)[0], &begin) || !json_to_u64((*off)[1], &end))
        return fail("'data_offsets' must be non-negative integers");
    if (begin > end) return fail("data_offsets begin > end");
    if (end > data_size) {
        return fail(string_format(
            "data_offsets [%llu, %llu) run past the data section (%llu bytes)",
            (unsigned long long)begin, (unsigned long long)end, (unsigned long long)data_size));
    }
    uint64_t expected = 0;
    if (__builtin_mul_overflow(numel, dtype_size(t->dtype), &expected))
        return fail("byte size overflows");
    if (end - begin != expected) {
        return fail(string_format("shape %s of %s needs %llu bytes but data_offsets span %llu",
                                  shape_string(t->shape).c_str(), dtype.c_str(),
                                  (unsigned long long)expected, (unsigned long long)(end - begin)));
    }
    t->offset = data_start + begin;
    t->nbytes = expected;
    return Status::Ok();
}

}  // namespace

std::string shape_string(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) {
        if (i) s += ", ";
        s += std::to_string(shape[i]);
    }
    return s + "]";
}

Result<CheckpointHeader> read_safetensors_header(const MappedFile& file) {
    const uint64_t size = file.size();
    if (size < 8) {
        return Status::Error(string_format(
            "truncated safetensors file: %llu bytes, less than the 8-byte header length",
            (unsigned long long)size));
    }
    uint64_t n = 0;
    std::memcpy(&n, file.data(), 8);  // little-endian hosts only (as is ggml)
    if (n > kMaxSafetensorsHeader) {
        return Status::Error(string_format(
            "safetensors header length %llu exceeds the %llu MiB limit (corrupt file?)",
            (unsigned long long)n, (unsigned long long)(kMaxSafetensorsHeader >> 20)));
    }
    if (n > size - 8) {
        return Status::Error(string_format(
            "safetensors header length %llu runs past the end of the file (%llu bytes): "
            "truncated or not a safetensors file",
            (unsigned long long)n, (unsigned long long)size));
    }
    const char* text = reinterpret_cast<const char*>(file.data() + 8);
    nlohmann::ordered_json header = nlohmann::ordered_json::parse(text, text + n, nullptr, false);
    if (header.is_discarded()) return Status::Error("safetensors header is not valid JSON");
    if (!header.is_object()) return Status::Error("safetensors header is not a JSON object");

    CheckpointHeader out;
    out.format = "safetensors";
    const uint64_t data_start = 8 + n;
    const uint64_t data_size = size - data_start;
    out.tensors.reserve(header.size());
    for (auto it = header.begin(); it != header.end(); ++it) {
        if (it.key() == "__metadata__") {
            if (!it->is_object()) return Status::Error("__metadata__ is not a JSON object");
            for (auto m = it->begin(); m != it->end(); ++m) {
                out.metadata[m.key()] = m->is_string() ? m->get<std::string>() : m->dump();
            }
            continue;
        }
        StoredTensor t;
        GGDIFF_TRY(parse_entry(it.key(), *it, data_start, data_size, &t));
        out.tensors.push_back(std::move(t));
    }

    // Byte ranges must not overlap (empty tensors may share an offset).
    std::vector<const StoredTensor*> order;
    order.reserve(out.tensors.size());
    for (const StoredTensor& t : out.tensors) {
        if (t.nbytes) order.push_back(&t);
    }
    std::sort(order.begin(), order.end(),
              [](const StoredTensor* a, const StoredTensor* b) { return a->offset < b->offset; });
    for (size_t i = 1; i < order.size(); ++i) {
        if (order[i]->offset < order[i - 1]->offset + order[i - 1]->nbytes) {
            return Status::Error("tensors '" + order[i - 1]->name + "' and '" + order[i]->name +
                                 "' have overlapping data_offsets");
        }
    }
    return out;
}

Result<CheckpointHeader> read_checkpoint_header(const MappedFile& file) {
    if (file.size() >= 4 && std::memcmp(file.data(), "GGUF", 4) == 0) {
        return read_gguf_header(file);
    }
    return read_safetensors_header(file);
}

}  // namespace ggdiff
