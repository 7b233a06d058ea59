// The weight handles graph builders use, under the names the nn layer builders know.
// They are defined one layer down (runtime/weights.h) because WeightStore implements
// them and runtime never includes nn.
#pragma once

#include "runtime/weights.h"

namespace ggdiff::nn {

using Weights = ggdiff::Weights;
using WeightAdapter = ggdiff::WeightAdapter;
using Ctx = ggdiff::BuildCtx;

}  // namespace ggdiff::nn
