// Conversion of stored tensor bytes (any checkpoint dtype or ggml type) to the ggml
// type a weight is loaded as: F32, F16, BF16, a quantized type, or the stored type.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "io/tensor_index.h"

namespace ggdiff {

// Bytes that `shape` takes in a ggml type (ne[0] = innermost = shape.back()); false when
// ne[0] is not a multiple of the type's block size or the size overflows.
bool ggml_nbytes_for(int ggml_type, const std::vector<int64_t>& shape, uint64_t* out);
// Bytes as stored (dtype size, or the ggml type for DType::GGML).
bool stored_nbytes(DType dtype, int ggml_type, const std::vector<int64_t>& shape, uint64_t* out);

// Converts a tensor's stored bytes `src` to ggml type `type` in `dst`, which must hold
// ggml_nbytes_for(type, t.shape) bytes. Same type: plain copy. Float dtypes and quantized
// ggml types go through F32. Integer tensors convert only to F32/F16/BF16 (or copy).
// Large tensors are converted on several threads.
Status convert_tensor(const TensorInfo& t, const uint8_t* src, int type, void* dst);

float f8_e4m3_to_f32(uint8_t v);  // float8_e4m3fn (no infinities, 0x7f/0xff = NaN)
float f8_e5m2_to_f32(uint8_t v);  // float8_e5m2 (IEEE-like)

}  // namespace ggdiff
