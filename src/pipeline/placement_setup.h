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

struct EnginePlacement {
    ModuleDevices te, diffusion, vae, control;
    bool auto_fit = false;
};

// Parses --backend/--params-backend/--split-mode/--max-vram (and --clip-on-cpu,
// --vae-on-cpu) against the devices present. Errors name the bad token.
Result<placement::PlacementSpec> validate_placement(const ModelOptions& options);

// The auto-fit plan for these files (no weights are read).
Result<placement::AutoFitPlan> plan_auto_fit_for(const ModelOptions& options,
                                                 const TensorIndex& index, int weight_type);

// Per-module devices, params location and split mode; with --auto-fit, from the plan
// (printed as a table with the derived flags).
Result<EnginePlacement> resolve_placement(const ModelOptions& options, const TensorIndex& index,
                                          int weight_type);

// placement::DeviceInfo for every ggml device.
std::vector<placement::DeviceInfo> placement_devices();

}  // namespace ggdiff
