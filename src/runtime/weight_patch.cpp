#include "runtime/weight_patch.h"

#include <ggml-backend.h>

#include <cstring>

#include "runtime/tensor_upload.h"

namespace ggdiff {
namespace {

// n elements of t's type at src -> f32.
Status to_f32(const ggml_tensor* t, const void* src, int64_t n, std::vector<float>& out) {
    out.resize(static_cast<size_t>(n));
    switch (t->type) {
        case GGML_TYPE_F32:
            std::memcpy(out.data(), src, static_cast<size_t>(n) * sizeof(float));
            return Status::Ok();
        case GGML_TYPE_F16:
            ggml_fp16_to_fp32_row(static_cast<const ggml_fp16_t*>(src), out.data(), n);
            return Status::Ok();
        case GGML_TYPE_BF16:
            ggml_bf16_to_fp32_row(static_cast<const ggml_bf16_t*>(src), out.data(), n);
            return Status::Ok();
        default: {
            const ggml_type_traits* tr = ggml_get_type_traits(t->type);
            if (!tr || !tr->to_float) {
                return Status::Error(std::string("cannot patch weights of type ") +
                                     ggml_type_name(t->type));
            }
            tr->to_float(src, out.data(), n);
            return Status::Ok();
        }
    }
}

void from_f32(const ggml_tensor* t, const std::vector<float>& in, void* dst) {
    const int64_t n = static_cast<int64_t>(in.size());
    switch (t->type) {
        case GGML_TYPE_F32:
            std::memcpy(dst, in.data(), static_cast<size_t>(n) * sizeof(float));
            break;
        case GGML_TYPE_F16:
            ggml_fp32_to_fp16_row(in.data(), static_cast<ggml_fp16_t*>(dst), n);
            break;
        case GGML_TYPE_BF16:
            ggml_fp32_to_bf16_row(in.data(), static_cast<ggml_bf16_t*>(dst), n);
            break;
        default:
            ggml_quantize_chunk(t->type, in.data(), dst, 0, n / t->ne[0], t->ne[0], nullptr);
            break;
    }
}

}  // namespace

Status WeightPatcher::add(const std::string& name, const std::vector<float>& delta, int64_t first) {
    ggml_tensor* t = store_.tensor(name);
    if (!t || !t->buffer) return Status::Error("weight " + name + " is not loaded");
    const int64_t n = static_cast<int64_t>(delta.size());
    // Whole rows of ggml's innermost dimension (a quantized type's blocks never cross them).
    if (first < 0 || first + n > ggml_nelements(t) || first % t->ne[0] != 0 || n % t->ne[0] != 0) {
        return Status::Error("patch for " + name + " has the wrong number of elements");
    }
    if (store_.in_mapped_file(name)) GGDIFF_TRY(store_.detach({name}));
    touched_.insert(name);
    const bool host = ggml_backend_buffer_is_host(t->buffer);
    if (host && t->type == GGML_TYPE_F32) {
        float* w = static_cast<float*>(t->data) + first;
        for (size_t i = 0; i < delta.size(); ++i) w[i] += delta[i];
        return Status::Ok();
    }
    const size_t row_bytes = ggml_row_size(t->type, t->ne[0]);
    const size_t offset = static_cast<size_t>(first / t->ne[0]) * row_bytes;
    const size_t size = static_cast<size_t>(n / t->ne[0]) * row_bytes;
    std::vector<uint8_t> staging;
    void* bytes = static_cast<uint8_t*>(t->data) + offset;
    if (!host) {
        staging.resize(size);
        ggml_backend_tensor_get(t, staging.data(), offset, size);
        bytes = staging.data();
    }
    std::vector<float> w;
    GGDIFF_TRY(to_f32(t, bytes, n, w));
    for (size_t i = 0; i < w.size(); ++i) w[i] += delta[i];
    from_f32(t, w, bytes);
    if (!host) set_tensor_in_pieces(t, staging.data(), offset, size);
    return Status::Ok();
}

Status WeightPatcher::restore() {
    std::vector<uint8_t> staging;
    for (const std::string& name : touched_) {
        ggml_tensor* t = store_.tensor(name);
        const TensorInfo* info = store_.source(name);
        if (!t || !info) return Status::Error("cannot restore weight " + name);
        if (!t->buffer) continue;  // released: the next load reads the original
        const bool host = ggml_backend_buffer_is_host(t->buffer);
        void* dst = t->data;
        if (!host) {
            staging.resize(ggml_nbytes(t));
            dst = staging.data();
        }
        Status st = store_.index().read(*info, t->type, dst);
        if (!st.ok()) return st.with_context("restoring " + name);
        if (!host) set_tensor_in_pieces(t, staging.data(), 0, ggml_nbytes(t));
        store_.index().release(*info);
    }
    touched_.clear();
    return Status::Ok();
}

}  // namespace ggdiff
