#include "io/tensor_convert.h"

#include <ggml.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>

#include "core/log.h"
#include "core/safe_text.h"

namespace ggdiff {

namespace {

bool is_int_dtype(DType d) {
    switch (d) {
        case DType::I64:
        case DType::I32:
        case DType::I16:
        case DType::I8:
        case DType::U8:
        case DType::BOOL:
            return true;
        default:
            return false;
    }
}

template <class T>
void cast_row(const uint8_t* src, float* dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        T v;
        std::memcpy(&v, src + i * sizeof(T), sizeof(T));
        dst[i] = static_cast<float>(v);
    }
}

// Stored rows [row0, row0 + nrows) -> floats. `row_bytes` is the stored size of a row.
void decode_rows(const TensorInfo& t, const uint8_t* src, int64_t ne0, size_t row_bytes,
                 int64_t row0, int64_t nrows, float* out) {
    const uint8_t* p = src + row0 * row_bytes;
    const int64_t n = ne0 * nrows;
    switch (t.dtype) {
        case DType::F32:
            std::memcpy(out, p, n * sizeof(float));
            return;
        case DType::F16:
            ggml_fp16_to_fp32_row(reinterpret_cast<const ggml_fp16_t*>(p), out, n);
            return;
        case DType::BF16:
            ggml_bf16_to_fp32_row(reinterpret_cast<const ggml_bf16_t*>(p), out, n);
            return;
        case DType::F64:
            cast_row<double>(p, out, n);
            return;
        case DType::F8_E4M3:
            for (int64_t i = 0; i < n; ++i) out[i] = f8_e4m3_to_f32(p[i]);
            return;
        case DType::F8_E5M2:
            for (int64_t i = 0; i < n; ++i) out[i] = f8_e5m2_to_f32(p[i]);
            return;
        case DType::I64:
            cast_row<int64_t>(p, out, n);
            return;
        case DType::I32:
            cast_row<int32_t>(p, out, n);
            return;
        case DType::I16:
            cast_row<int16_t>(p, out, n);
            return;
        case DType::I8:
            cast_row<int8_t>(p, out, n);
            return;
        case DType::U8:
        case DType::BOOL:
            cast_row<uint8_t>(p, out, n);
            return;
        case DType::GGML: {
            const auto* traits = ggml_get_type_traits(static_cast<ggml_type>(t.ggml_type));
            for (int64_t r = 0; r < nrows; ++r)
                traits->to_float(p + r * row_bytes, out + r * ne0, ne0);
            return;
        }
    }
}

// floats -> rows of `type` at dst (already offset to the first row).
void encode_rows(int type, const float* in, int64_t ne0, int64_t nrows, uint8_t* dst) {
    const int64_t n = ne0 * nrows;
    switch (type) {
        case GGML_TYPE_F32:
            std::memcpy(dst, in, n * sizeof(float));
            return;
        case GGML_TYPE_F16:
            ggml_fp32_to_fp16_row(in, reinterpret_cast<ggml_fp16_t*>(dst), n);
            return;
        case GGML_TYPE_BF16:
            ggml_fp32_to_bf16_row(in, reinterpret_cast<ggml_bf16_t*>(dst), n);
            return;
        default:
            ggml_quantize_chunk(static_cast<ggml_type>(type), in, dst, 0, nrows, ne0, nullptr);
    }
}

bool source_decodable(const TensorInfo& t) {
    if (t.dtype != DType::GGML) return true;
    if (t.ggml_type < 0 || t.ggml_type >= GGML_TYPE_COUNT) return false;
    const auto* traits = ggml_get_type_traits(static_cast<ggml_type>(t.ggml_type));
    return traits && traits->to_float && ggml_blck_size(static_cast<ggml_type>(t.ggml_type)) > 0;
}

bool target_encodable(int type) {
    if (type == GGML_TYPE_F32 || type == GGML_TYPE_F16 || type == GGML_TYPE_BF16) return true;
    if (type < 0 || type >= GGML_TYPE_COUNT) return false;
    const auto t = static_cast<ggml_type>(type);
    return ggml_is_quantized(t) && ggml_blck_size(t) > 0 && !ggml_quantize_requires_imatrix(t) &&
           ggml_get_type_traits(t)->from_float_ref != nullptr;
}

}  // namespace

float f8_e4m3_to_f32(uint8_t v) {
    const int e = (v >> 3) & 0xF;
    const int m = v & 0x7;
    float r;
    if (e == 0xF && m == 0x7) return std::numeric_limits<float>::quiet_NaN();
    if (e == 0) {
        r = std::ldexp(static_cast<float>(m) / 8.0f, -6);
    } else {
        r = std::ldexp(1.0f + static_cast<float>(m) / 8.0f, e - 7);
    }
    return (v & 0x80) ? -r : r;
}

float f8_e5m2_to_f32(uint8_t v) {
    const int e = (v >> 2) & 0x1F;
    const int m = v & 0x3;
    float r;
    if (e == 0x1F) {
        r = m ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
    } else if (e == 0) {
        r = std::ldexp(static_cast<float>(m) / 4.0f, -14);
    } else {
        r = std::ldexp(1.0f + static_cast<float>(m) / 4.0f, e - 15);
    }
    return (v & 0x80) ? -r : r;
}

bool ggml_nbytes_for(int type, const std::vector<int64_t>& shape, uint64_t* out) {
    if (type < 0 || type >= GGML_TYPE_COUNT) return false;
    const auto t = static_cast<ggml_type>(type);
    const int64_t blck = ggml_blck_size(t);
    if (blck <= 0 || ggml_type_size(t) == 0) return false;
    const int64_t ne0 = shape.empty() ? 1 : shape.back();
    if (ne0 % blck != 0) return false;
    uint64_t rows = 1;
    for (size_t i = 0; i + 1 < shape.size(); ++i) {
        if (__builtin_mul_overflow(rows, static_cast<uint64_t>(shape[i]), &rows)) return false;
    }
    return !__builtin_mul_overflow(rows, static_cast<uint64_t>(ggml_row_size(t, ne0)), out);
}

bool stored_nbytes(DType dtype, int ggml_type, const std::vector<int64_t>& shape, uint64_t* out) {
    if (dtype == DType::GGML) return ggml_nbytes_for(ggml_type, shape, out);
    uint64_t n = dtype_size(dtype);
    for (int64_t d : shape) {
        if (d < 0 || __builtin_mul_overflow(n, static_cast<uint64_t>(d), &n)) return false;
    }
    *out = n;
    return true;
}

Status convert_tensor(const TensorInfo& t, const uint8_t* src, int type, void* dst) {
    auto fail = [&](const std::string& why) {
        return Status::Error("tensor " + quote_name(t.name) + ": " + why);
    };
    const char* type_name =
        type >= 0 && type < GGML_TYPE_COUNT ? ggml_type_name(static_cast<ggml_type>(type)) : "?";
    if (type >= 0 && type == t.ggml_type) {
        if (t.nbytes != 0) std::memcpy(dst, src, t.nbytes);  // dst may be null when empty
        return Status::Ok();
    }
    if (!target_encodable(type)) return fail(std::string("cannot convert to type ") + type_name);
    if (!source_decodable(t)) {
        return fail(string_format("stored type %d has no conversion to float", t.ggml_type));
    }
    if (is_int_dtype(t.dtype) && ggml_is_quantized(static_cast<ggml_type>(type))) {
        return fail(std::string("integer tensor cannot be quantized to ") + type_name);
    }
    uint64_t out_bytes = 0;
    if (!ggml_nbytes_for(type, t.shape, &out_bytes)) {
        return fail(string_format("row length %lld is not a multiple of the %s block size %lld",
                                  (long long)(t.shape.empty() ? 1 : t.shape.back()), type_name,
                                  (long long)ggml_blck_size(static_cast<ggml_type>(type))));
    }
    uint64_t in_bytes = 0;
    if (!stored_nbytes(t.dtype, t.ggml_type, t.shape, &in_bytes) || in_bytes != t.nbytes) {
        return fail("stored byte size does not match its shape and type");
    }
    const int64_t ne0 = t.shape.empty() ? 1 : t.shape.back();
    const int64_t numel = t.numel();
    if (numel == 0) return Status::Ok();
    const int64_t rows = numel / ne0;
    const size_t in_row = in_bytes / rows;
    const size_t out_row = out_bytes / rows;

    // Chunks of about 256K elements, spread over threads for large tensors.
    const int64_t chunk_rows = std::max<int64_t>(1, (1 << 18) / ne0);
    const int64_t n_chunks = (rows + chunk_rows - 1) / chunk_rows;
    const int64_t hw = std::max(1u, std::thread::hardware_concurrency());
    const int64_t n_threads = std::min<int64_t>({hw, 8, n_chunks});
    auto worker = [&](int64_t first_chunk) {
        std::vector<float> buf(static_cast<size_t>(std::min(chunk_rows, rows) * ne0));
        for (int64_t c = first_chunk; c < n_chunks; c += n_threads) {
            const int64_t r0 = c * chunk_rows;
            const int64_t nr = std::min(chunk_rows, rows - r0);
            decode_rows(t, src, ne0, in_row, r0, nr, buf.data());
            encode_rows(type, buf.data(), ne0, nr, static_cast<uint8_t*>(dst) + r0 * out_row);
        }
    };
    if (n_threads <= 1) {
        worker(0);
    } else {
        std::vector<std::thread> pool;
        for (int64_t i = 0; i < n_threads; ++i) pool.emplace_back(worker, i);
        for (auto& th : pool) th.join();
    }
    return Status::Ok();
}

}  // namespace ggdiff
