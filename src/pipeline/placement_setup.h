// From the placement flags to where each module runs: validation (before any weight
// is read), auto-fit planning, and the per-module device assignment.
#pragma once

#include <string>

#include "io/tensor_index.h"
#include "pipeline/options.h"
#include "placement/auto_fit.h"
#include "placement/placement_spec.h"
#include "runtime/module_runner.h"

namespace ggdiff {

// Where the modules of one replica of the model run (one replica unless --backend has
// '|' lists: placement/data_parallel.h).
struct EnginePlacement {
    ModuleDevices te, diffusion, vae, control;
    bool auto_fit = false;
    // Data parallel: the devices of the replica's '|' entries and its name ("RPC1", or
    // "CUDA1+RPC1"); empty without '|'.
    std::vector<std::string> replica_devices;
    std::string replica;
};

// Parses --backend/--params-backend/--split-mode/--max-vram (and --clip-on-cpu,
// --vae-on-cpu) against the devices present. Errors name the bad token.
Result<placement::PlacementSpec> validate_placement(const ModelOptions& options);

// The auto-fit plan for these files (no weights are read).
Result<placement::AutoFitPlan> plan_auto_fit_for(const ModelOptions& options,
                                                 const TensorIndex& index, int weight_type);

// Per-module devices, params location and split mode, one EnginePlacement per data-parallel
// replica (one without '|'); with --auto-fit, from the plan (printed as a table with the
// derived flags; auto-fit plans a single replica).
Result<std::vector<EnginePlacement>> resolve_placement(const ModelOptions& options,
                                                       const TensorIndex& index, int weight_type);

// placement::DeviceInfo for every ggml device.
std::vector<placement::DeviceInfo> placement_devices();

}  // namespace ggdiff
