// From the placement flags to where each module runs: validation (before any weight
// is read), auto-fit planning, and the per-module device assignment.
#pragma once

#include <map>
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
    ModuleDevices upscaler;  // --upscale-model (its first replica's only)
    // --clip_vision: its own entry when the flags name the clip_vision module, else the text
    // encoders' first device (with their params location).
    ModuleDevices clip_vision;
    // --photo-maker's ID encoder: its own entry when the flags name the photomaker module,
    // else like clip_vision.
    ModuleDevices photomaker;
    bool auto_fit = false;
    // Data parallel: the devices of the replica's '|' entries and its name ("RPC1", or
    // "CUDA1+RPC1"); empty without '|'.
    std::vector<std::string> replica_devices;
    std::string replica;
};

// Parses --backend/--params-backend/--split-mode/--max-vram (and --clip-on-cpu,
// --vae-on-cpu) against the devices present. Errors name the bad token.
Result<placement::PlacementSpec> validate_placement(const ModelOptions& options);

// Compute buffers measured at the requested size, per module name ("te", "diffusion",
// "vae", ...; see ComputeProbe).
using ComputeFigures = std::map<std::string, uint64_t>;

// The auto-fit plan for these files (no weights are read); `measured` (may be null) replaces
// the standard reserves.
Result<placement::AutoFitPlan> plan_auto_fit_for(const ModelOptions& options,
                                                 const TensorIndex& index, int weight_type,
                                                 const ComputeFigures* measured = nullptr);

// Per-module devices, params location and split mode, one EnginePlacement per data-parallel
// replica (one without '|'); with --auto-fit, from the plan (printed as a table with the
// derived flags; auto-fit plans a single replica). `measured` (may be null) sizes the
// auto-fit reserves and the layer-split headroom.
Result<std::vector<EnginePlacement>> resolve_placement(const ModelOptions& options,
                                                       const TensorIndex& index, int weight_type,
                                                       const ComputeFigures* measured = nullptr);

// The upscaler's devices (--backend "upscaler=..."), params location and kernel settings;
// for -M upscale, which loads no model files.
ModuleDevices upscaler_module_devices(const placement::PlacementSpec& spec,
                                      const ModelOptions& options);

// Whether these flags place anything by compute headroom (--auto-fit or a layer split), so
// that measuring the compute buffers first is worth it.
bool placement_uses_headroom(const ModelOptions& options);

// placement::DeviceInfo for every ggml device.
std::vector<placement::DeviceInfo> placement_devices();

}  // namespace ggdiff
