// The family registry: the one place that knows the model families. It detects a family from
// tensor names (single files, split parts, diffusers folders, GGUF: all reach it as one
// canonical TensorIndex), is the only source of a family's name, and hands the families' own
// tensor layouts to the index that opens model files. -M info, -M convert, the engine, the
// diffusers-folder routing and the server's capabilities all ask it.
//
// Adding a family: a folder src/families/<family>/ with its recipe (FamilyRecipe) and one line
// in registry.cpp (docs/adding_a_family.md).
#pragma once

#include <string>
#include <vector>

#include "io/tensor_index.h"
#include "pipeline/family.h"

namespace ggdiff {

// Every recipe, most specific first (the first whose detect() accepts the weights wins),
// including the detect-only ones (load == nullptr).
const std::vector<const FamilyRecipe*>& family_recipes();

// The recipe for these weights (possibly detect-only), or nullptr.
const FamilyRecipe* find_family(const TensorIndex& index);

// The recipe with this id, or nullptr.
const FamilyRecipe* family_by_id(const std::string& id);

// The family's id for these weights ("sd1", "flux", ...), or "unknown".
std::string family_id(const TensorIndex& index);

// Every family's own tensor layouts, for TensorIndex(ModelLayouts).
const ModelLayouts& model_layouts();

// An empty index that knows every family's tensor layouts: how model files are opened.
TensorIndex model_index();

// The recipe that runs these files, or the error why none can: none detected (naming what
// was looked for), or a detect-only family ("sd3 models (SD3 / SD3.5) are not supported yet").
Result<const FamilyRecipe*> runnable_family(const TensorIndex& index);

// Each family's "<id>: <signature>", in detection order (what was looked for).
std::vector<std::string> family_signatures();

// An error naming the first part file in `options` (--clip_l, --clip_g, --t5xxl, --llm,
// --taesd) that the recipe's parts do not read; Ok when all are read or unchecked.
// --clip_vision is always checked: a recipe without "clip_vision" in part_files refuses it.
Status check_part_files(const FamilyRecipe& recipe, const ModelOptions& options);

}  // namespace ggdiff
