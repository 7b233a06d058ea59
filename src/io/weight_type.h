// Which ggml type each weight is loaded or converted as (--type).
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "io/tensor_index.h"

namespace ggdiff {

// "f32", "f16", "bf16", "q8_0", "q5_0", "q5_1", "q4_0", "q4_1", "q4_K", "q5_K", "q6_K",
// "q3_K", "q2_K" (case-insensitive) -> ggml_type. The error lists the valid names.
Result<int> parse_weight_type(const std::string& name);
// The names parse_weight_type() accepts, in ggml's spelling ("f16", "q8_0", "q4_K", ...).
std::vector<std::string> weight_type_names();
// ggml's name of a ggml_type ("q4_K").
const char* weight_type_name(int type);

// The type tensor `t` should have when the user asked for `requested_type` (a ggml_type,
// or -1 to keep the stored type where ggml can use it):
//  - keep (-1): stored ggml types stay; F64 -> F32; F8 -> F16; U8/BOOL -> F32.
//  - integer tensors keep their type (or F32 when ggml has none); never quantized.
//  - 1-D tensors (biases, norm scales) -> F32 whatever was requested.
//  - a float request (F32/F16/BF16) is honoured for everything else.
//  - a quantized request applies to 2-D+ matrices only; these stay F16 instead: norms,
//    biases, position embeddings, small tensors (< 1024 elements), rows not a multiple
//    of the block size, convolution kernels (4-D+) and VAE weights. Token embeddings
//    asked for a K-quant get Q8_0 (get_rows support on every backend).
int choose_weight_type(const TensorInfo& t, int requested_type);

// Bytes of `t` once loaded as `type` (0 if it cannot be).
uint64_t weight_nbytes(const TensorInfo& t, int type);

}  // namespace ggdiff
