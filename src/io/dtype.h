// Storage dtypes of checkpoint tensors (safetensors names) and their ggml mapping.
#pragma once

#include <cstdint>
#include <string>

namespace ggdiff {

enum class DType {
    F64, F32, F16, BF16, F8_E4M3, F8_E5M2, I64, I32, I16, I8, U8, BOOL,
    GGML,  // a ggml type stored in a GGUF file (quantized or not); see TensorInfo::ggml_type
};

const char* dtype_name(DType t);
bool parse_dtype(const std::string& s, DType* out);  // safetensors spelling: "F16", "BF16", ...
size_t dtype_size(DType t);                          // bytes per element; 0 for GGML

}  // namespace ggdiff
