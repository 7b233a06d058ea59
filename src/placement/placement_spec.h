// The four placement flags parsed and validated together, before any weight is read.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "placement/backend_spec.h"
#include "placement/max_vram.h"
#include "placement/params_spec.h"
#include "placement/split_mode.h"

namespace ggdiff::placement {

// The flags as given on the command line or in a request; nullopt = not given (an
// empty string is given, and an error).
struct PlacementArgs {
    std::optional<std::string> backend;         // --backend
    std::optional<std::string> params_backend;  // --params-backend
    std::optional<std::string> split_mode;      // --split-mode
    std::optional<std::string> max_vram;        // --max-vram
};

// Where one module of one replica runs.
struct ModulePlacement {
    DeviceList devices;                    // empty: the default device; >1: a split
    std::optional<ParamsLocation> params;  // explicit --params-backend (never Kind::Default)
    SplitMode split_mode = SplitMode::Layer;
};

struct PlacementSpec {
    BackendSpec backend;
    ParamsSpec params;
    SplitModeSpec split_mode;
    MaxVramSpec max_vram;

    // Module m of data-parallel replica `replica` (placement/data_parallel.h): a '|' list
    // gives its replica-th device, any other value is the same for every replica.
    ModulePlacement module(Module m, size_t replica = 0) const;
    bool operator==(const PlacementSpec& o) const {
        return backend == o.backend && params == o.params && split_mode == o.split_mode &&
               max_vram == o.max_vram;
    }
};

// Parses every given flag. The error is prefixed with the flag ("--backend: unknown
// device \"X\" (known: ...)").
Result<PlacementSpec> parse_placement_spec(const PlacementArgs& args,
                                           const std::vector<std::string>& device_names);

// The flags that reproduce `spec` ("--backend X --params-backend Y ..."), values quoted
// for a POSIX shell where needed ("diffusion=A&B"); empty parts are left out.
std::string to_string(const PlacementSpec& spec);

}  // namespace ggdiff::placement
