// FLUX.1's own tensor names: the diffusers FluxTransformer2DModel form renamed to the original
// single-file names (split q/k/v kept apart), and the layout record the registry hands to io.
#pragma once

#include <string>
#include <vector>

#include "io/model_layout.h"

namespace ggdiff {

class DiffusersFluxMap {
  public:
    static bool detect(const std::vector<std::string>& names);
    static bool map(const std::string& name, std::string* out);
};

// Bare FLUX-layout DiTs (FLUX.1, and the double/single-block families that share its names)
// and the diffusers FLUX pipelines.
extern const ModelLayout kFluxLayout;

}  // namespace ggdiff
