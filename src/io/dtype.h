// Storage dtypes of checkpoint tensors (safetensors names) and their ggml mapping.
#pragma once

#include <cstdint>
#include <string>

namespace ggdiff {

// clang-format off
enum class DType {
    F64, F32, F16, BF16, F8_E4M3, F8_E5M2, I64, I32, I16, I8, U8, BOOL,
    GGML,  // a ggml type stored in a GGUF file (quantized or not); see TensorInfo::ggml_type
};
// clang-format on

const char* dtype_name(DType t);
bool parse_dtype(const std::string& s, DType* out);  // safetensors spelling: "F16", "BF16", ...
size_t dtype_size(DType t);                          // bytes per element; 0 for GGML

// The ggml_type with the same element layout, or -1 (F8_*, U8, BOOL, GGML have none).
int dtype_to_ggml(DType t);
// The DType of a plain (non-quantized) ggml type; DType::GGML for quantized types.
DType dtype_from_ggml(int ggml_type);
// True for the floating-point dtypes (F64, F32, F16, BF16, F8_*).
bool dtype_is_float(DType t);

}  // namespace ggdiff
