// The registry of model families: which recipe a set of weights belongs to.
#pragma once

#include <vector>

#include "pipeline/family.h"

namespace ggdiff {

// Every recipe, most specific first (the first whose detect() accepts the weights wins).
const std::vector<const FamilyRecipe*>& family_recipes();

// The recipe for these weights, or nullptr.
const FamilyRecipe* find_family(const TensorIndex& index);

// An error naming the first part file in `options` (--clip_l, --clip_g, --t5xxl, --llm,
// --taesd) that the recipe's parts do not read; Ok when all are read or unchecked.
Status check_part_files(const FamilyRecipe& recipe, const ModelOptions& options);

}  // namespace ggdiff
