// GGUF through ggml's gguf API (metadata only; data stays in the mmap).
#include <gguf.h>

#include <ggml.h>

#include <cinttypes>
#include <cstring>
#include <memory>

#include "core/log.h"
#include "io/checkpoint_file.h"
#include "io/mapped_file.h"

namespace ggdiff {

namespace {

struct GgufDeleter {
    void operator()(gguf_context* c) const { gguf_free(c); }
};

std::string kv_to_string(const gguf_context* ctx, int64_t i) {
    switch (gguf_get_kv_type(ctx, i)) {
        case GGUF_TYPE_STRING:
            return gguf_get_val_str(ctx, i);
        case GGUF_TYPE_UINT8:
            return std::to_string(gguf_get_val_u8(ctx, i));
        case GGUF_TYPE_INT8:
            return std::to_string(gguf_get_val_i8(ctx, i));
        case GGUF_TYPE_UINT16:
            return std::to_string(gguf_get_val_u16(ctx, i));
        case GGUF_TYPE_INT16:
            return std::to_string(gguf_get_val_i16(ctx, i));
        case GGUF_TYPE_UINT32:
            return std::to_string(gguf_get_val_u32(ctx, i));
        case GGUF_TYPE_INT32:
            return std::to_string(gguf_get_val_i32(ctx, i));
        case GGUF_TYPE_UINT64:
            return std::to_string(gguf_get_val_u64(ctx, i));
        case GGUF_TYPE_INT64:
            return std::to_string(gguf_get_val_i64(ctx, i));
        case GGUF_TYPE_FLOAT32:
            return string_format("%g", gguf_get_val_f32(ctx, i));
        case GGUF_TYPE_FLOAT64:
            return string_format("%g", gguf_get_val_f64(ctx, i));
        case GGUF_TYPE_BOOL:
            return gguf_get_val_bool(ctx, i) ? "true" : "false";
        default:
            return "";
    }
}

std::vector<std::string> string_array(const gguf_context* ctx, int64_t id) {
    std::vector<std::string> out;
    const size_t n = gguf_get_arr_n(ctx, id);
    out.reserve(n);
    for (size_t i = 0; i < n; ++i) out.emplace_back(gguf_get_arr_str(ctx, id, i));
    return out;
}

bool parse_shape(const std::string& s, std::vector<int64_t>* shape) {
    shape->clear();
    if (s.empty()) return true;  // scalar
    size_t pos = 0;
    while (pos <= s.size()) {
        size_t comma = s.find(',', pos);
        if (comma == std::string::npos) comma = s.size();
        const std::string part = s.substr(pos, comma - pos);
        if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos ||
            part.size() > 15) {
            return false;
        }
        shape->push_back(std::stoll(part));
        pos = comma + 1;
    }
    return true;
}

// Restores the canonical names and exact shapes that convert_to_gguf stores in tables.
void apply_ggdiff_tables(CheckpointHeader* h) {
    const size_t n = h->tensors.size();
    auto names = h->tables.find("ggdiff.tensor_names");
    if (names != h->tables.end() && names->second.size() == n) {
        for (size_t i = 0; i < n; ++i) h->tensors[i].name = names->second[i];
    }
    auto shapes = h->tables.find("ggdiff.tensor_shapes");
    if (shapes == h->tables.end() || shapes->second.size() != n) return;
    for (size_t i = 0; i < n; ++i) {
        std::vector<int64_t> shape;
        if (!parse_shape(shapes->second[i], &shape)) continue;
        int64_t want = 1, have = 1;
        for (int64_t d : shape) want *= d;
        for (int64_t d : h->tensors[i].shape) have *= d;
        if (want == have) h->tensors[i].shape = std::move(shape);
    }
}

}  // namespace

Result<CheckpointHeader> read_gguf_header(const MappedFile& file) {
    if (file.size() < 24) {
        return Status::Error(
            string_format("truncated GGUF file: only %llu bytes", (unsigned long long)file.size()));
    }
    // Our strict parser first: it gives precise messages, and it keeps files that would
    // make ggml's reader abort (a non-u32 general.alignment) or allocate absurd amounts
    // (huge array counts) away from it.
    auto direct = read_gguf_header_direct(file);
    if (!direct.ok()) return direct.status();
    bool ggml_can_read = true;
    for (const StoredTensor& t : direct->tensors) {
        // ggml caps names at GGML_MAX_NAME (other tools do not), and some of its versions
        // divide by dimensions while checking them.
        ggml_can_read = ggml_can_read && t.name.size() < GGML_MAX_NAME;
        for (int64_t d : t.shape) ggml_can_read = ggml_can_read && d != 0;
    }
    if (!ggml_can_read) {
        GGDIFF_LOG_DEBUG("%s: long tensor names or empty tensors, read by ggdiff's own parser",
                         file.path().c_str());
        apply_ggdiff_tables(&*direct);
        return direct;
    }

    gguf_init_params params{};
    params.no_alloc = true;
    params.ctx = nullptr;
    std::unique_ptr<gguf_context, GgufDeleter> ctx(
        gguf_init_from_file(file.path().c_str(), params));
    if (!ctx) {
        return Status::Error(
            "ggml's GGUF reader rejected the file (ggml's log above has the details)");
    }

    CheckpointHeader out;
    out.format = "gguf";
    const int64_t n_kv = gguf_get_n_kv(ctx.get());
    for (int64_t i = 0; i < n_kv; ++i) {
        const std::string key = gguf_get_key(ctx.get(), i);
        if (gguf_get_kv_type(ctx.get(), i) != GGUF_TYPE_ARRAY) {
            out.metadata[key] = kv_to_string(ctx.get(), i);
        } else if (gguf_get_arr_type(ctx.get(), i) == GGUF_TYPE_STRING &&
                   key.rfind("ggdiff.", 0) == 0) {
            out.tables[key] = string_array(ctx.get(), i);
        }
    }

    const int64_t n = gguf_get_n_tensors(ctx.get());
    const uint64_t data_offset = gguf_get_data_offset(ctx.get());
    out.tensors.reserve(n);
    for (int64_t i = 0; i < n; ++i) {
        StoredTensor t;
        t.name = gguf_get_tensor_name(ctx.get(), i);
        t.ggml_type = gguf_get_tensor_type(ctx.get(), i);
        t.dtype = dtype_from_ggml(t.ggml_type);
        // GGUF records no size-1 outer dims; ggdiff's table has the exact shape.
        const int64_t* ne = gguf_get_tensor_ne(ctx.get(), i);
        int n_dims = GGML_MAX_DIMS;
        while (n_dims > 1 && ne[n_dims - 1] == 1) --n_dims;
        for (int d = n_dims - 1; d >= 0; --d) t.shape.push_back(ne[d]);
        t.offset = data_offset + gguf_get_tensor_offset(ctx.get(), i);
        t.nbytes = gguf_get_tensor_size(ctx.get(), i);
        if (t.offset > file.size() || t.nbytes > file.size() - t.offset) {
            return Status::Error("tensor '" + t.name +
                                 "': data runs past the end of the file (truncated GGUF?)");
        }
        out.tensors.push_back(std::move(t));
    }
    apply_ggdiff_tables(&out);
    return out;
}

}  // namespace ggdiff
