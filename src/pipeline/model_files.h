// Opens the checkpoint files named by ModelOptions into one TensorIndex.
#pragma once

#include "io/tensor_index.h"
#include "pipeline/options.h"

namespace ggdiff {

// The built-in model (models/ggdiff-toy-shapes.safetensors: a small SD1-layout model of
// coloured shapes) when it can be found: $GGDIFF_DEFAULT_MODEL, next to the executable's
// folder (../models/, ../share/ggdiff/), or in the source tree it was built from; "" if not.
std::string default_model_path();

// Adds -m, --diffusion-model, --vae, --clip_l, --clip_g, --t5xxl, --llm and --taesd
// files under their canonical prefixes; with neither -m nor --diffusion-model, the built-in
// model stands in for -m. Errors name the flag and the file.
Result<TensorIndex> open_model_files(const ModelOptions& options);

}  // namespace ggdiff
