// --max-vram SPEC: GiB budgets per device. "8" (every device), "RPC0=4,RPC1=-2",
// "all=6,CUDA1=-1.5". Positive: use at most that many GiB (never more than is free).
// Negative: leave that many GiB free. Zero or a non-number is an error.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "placement/device_info.h"

namespace ggdiff::placement {

struct MaxVramSpec {
    std::optional<double> all_gib;                           // all= or the bare form
    std::vector<std::pair<std::string, double>> per_device;  // canonical names, as given

    // The device's entry, else all=, else nullopt.
    std::optional<double> gib_for(const std::string& device) const;
    bool empty() const { return !all_gib && per_device.empty(); }
    bool operator==(const MaxVramSpec& o) const {
        return all_gib == o.all_gib && per_device == o.per_device;
    }
};

// Errors: bad --max-vram value "X" ..., unknown device "X" (known: ...), a device twice.
Result<MaxVramSpec> parse_max_vram(const std::string& spec,
                                   const std::vector<std::string>& device_names);
std::string to_string(const MaxVramSpec& spec);  // "RPC0=4,RPC1=-2"

// Budget of a device: positive = min(GiB, free), negative = free - GiB, unset =
// free - 512 MiB; never below 0.
uint64_t device_budget(const DeviceInfo& device, const MaxVramSpec& max_vram);
// The free memory a split should share by: the budget when --max-vram names the device
// (directly or by all=), else the device's free memory.
uint64_t split_free_bytes(const DeviceInfo& device, const MaxVramSpec& max_vram);

}  // namespace ggdiff::placement
