// `ggdiff -M convert -o NAME.safetensors`: an index's tensors, under their canonical names, as
// a safetensors file (a PyTorch .ckpt made safe to share, for example).
#pragma once

#include <string>

#include "core/status.h"
#include "io/gguf_writer.h"
#include "io/tensor_index.h"

namespace ggdiff {

// Writes every tensor of `index` (except training-only model_ema.* copies) as
// choose_weight_type(t, requested_type) picks, which must be a type safetensors has (F32, F16,
// BF16, F64 or an integer type: a quantized --type is refused, GGUF holds those). String
// metadata is kept and `family` is added as ggdiff.family. The file is written to a temporary
// name next to out_path and renamed into place, so a failure never leaves a partial file.
Status convert_to_safetensors(const TensorIndex& index, const std::string& out_path,
                              int requested_type, const ConvertProgress& progress = nullptr,
                              const std::string& family = "unknown");

}  // namespace ggdiff
