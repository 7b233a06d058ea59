// `ggdiff -M convert`: writes an index's tensors, under their canonical names, to GGUF.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "core/status.h"
#include "io/tensor_index.h"

namespace ggdiff {

// Called after each tensor is written.
using ConvertProgress =
    std::function<void(size_t done, size_t total, const std::string& tensor_name)>;

// Writes every tensor of `index` (except training-only model_ema.* copies) converted
// per choose_weight_type(t, requested_type) (-1 keeps stored types where ggml can use
// them). ggml limits tensor names to 63 bytes, so the file also carries the string arrays
// `ggdiff.tensor_names` (canonical names) and `ggdiff.tensor_shapes` (exact torch shapes, "a,b,c";
// GGUF itself drops size-1 outer dims and has at most 4 dims), which TensorIndex uses when reading
// it back; tensors with long names are stored as "ggdiff.t<N>". The file is written to a temporary
// name next to out_path and renamed into place, so a failure never leaves a partial file.
// `family` is written as ggdiff.family: the registry's id for the index
// (families/registry.h: family_id), "unknown" when none matches.
Status convert_to_gguf(const TensorIndex& index, const std::string& out_path, int requested_type,
                       const ConvertProgress& progress = nullptr,
                       const std::string& family = "unknown");

}  // namespace ggdiff
