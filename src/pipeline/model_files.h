// Opens the checkpoint files named by ModelOptions into one TensorIndex.
#pragma once

#include "io/tensor_index.h"
#include "pipeline/options.h"

namespace ggdiff {

// Adds -m, --diffusion-model, --vae, --clip_l, --clip_g, --t5xxl, --llm and --taesd
// files under their canonical prefixes. Errors name the flag and the file.
Result<TensorIndex> open_model_files(const ModelOptions& options);

}  // namespace ggdiff
