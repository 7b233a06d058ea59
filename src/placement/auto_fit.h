// Auto-fit (--auto-fit): chooses devices for the diffusion model, the text encoders and
// the VAE from their sizes and the devices' budgets (MISSION.md, "Auto-fit").
//
// Budgets per GPU-type device come from --max-vram (see device_budget). Resident plan
// first: components largest first, each onto the device with the most budget left where
// the params placed there so far + this component + the largest reserve of the
// components there (this one included) fit. If any does not fit, the time-share plan:
// each component goes to the device with the largest budget on which its params + its
// reserve fit; if none, a splittable component whose params fit in the sum of
// (budget - reserve) over the devices whose budget exceeds the reserve is split across
// those devices, largest budget first, layer or row per --split-mode; otherwise it runs
// on the CPU. In time-share mode components placed on GPUs get disk params (loaded per
// phase, freed after). No GPU-type device at all: the default device, with a warning.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "placement/device_info.h"
#include "placement/max_vram.h"
#include "placement/module.h"
#include "placement/placement_spec.h"
#include "placement/split_mode.h"

namespace ggdiff::placement {

struct ComponentSize {
    Module module = Module::Diffusion;
    uint64_t params_bytes = 0;   // weights after the requested type conversion
    uint64_t reserve_bytes = 0;  // compute buffers
    bool splittable = false;
    // The compute buffer measured at the requested size (0: not measured) and the standard
    // reserve it replaced.
    uint64_t measured_bytes = 0;
    uint64_t default_reserve_bytes = 0;
};

// The three components with their standard reserves: diffusion 2 GiB splittable,
// te 2 GiB splittable, vae 1 GiB not splittable. Components of 0 bytes are left out.
std::vector<ComponentSize> standard_components(uint64_t diffusion_bytes, uint64_t te_bytes,
                                               uint64_t vae_bytes);

// Replaces the standard reserves by the measured compute buffers (per module, at the
// requested size) plus compute_margin; components without a measurement keep theirs.
void apply_measured_reserves(std::vector<ComponentSize>& components,
                             const std::map<Module, uint64_t>& measured);

struct AutoFitInput {
    std::vector<DeviceInfo> devices;  // every device; only GPU-type ones get budgets
    std::vector<ComponentSize> components;
    MaxVramSpec max_vram;
    SplitModeSpec split_mode;
};

enum class FitMode { Resident, TimeShare, DefaultDevice };
const char* fit_mode_name(FitMode m);  // "resident", "time-share", "default-device"

struct FitDevice {
    std::string name;
    uint64_t free_bytes = 0;
    uint64_t budget_bytes = 0;
    uint64_t planned_bytes = 0;  // resident: params placed + largest reserve; else 0
};

struct FitComponent {
    Module module = Module::Diffusion;
    uint64_t params_bytes = 0;
    uint64_t reserve_bytes = 0;
    bool splittable = false;
    uint64_t measured_bytes = 0;  // see ComponentSize
    uint64_t default_reserve_bytes = 0;
    std::vector<std::string> targets;  // one device, the split devices, the CPU, or none
    bool split = false;
    SplitMode split_mode = SplitMode::Layer;  // meaningful when split
    bool on_cpu = false;                      // fits on no GPU
    bool disk_params = false;                 // time-share: loaded per phase, freed after
};

struct AutoFitPlan {
    FitMode mode = FitMode::Resident;
    std::vector<FitDevice> devices;        // GPU-type devices, input order
    std::vector<FitComponent> components;  // largest first
    PlacementSpec spec;                    // derived --backend/--params-backend/--split-mode
    std::vector<std::string> warnings;

    bool time_share() const { return mode == FitMode::TimeShare; }
    // Derived flag values; empty when the flag is not needed.
    std::string backend() const { return to_string(spec.backend); }
    std::string params_backend() const { return to_string(spec.params); }
    std::string split_mode() const { return to_string(spec.split_mode); }
};

AutoFitPlan plan_auto_fit(const AutoFitInput& input);

}  // namespace ggdiff::placement
