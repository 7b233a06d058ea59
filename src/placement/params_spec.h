// --params-backend SPEC: where a module's weights live when not on its compute device.
// Same shape as --backend, but each value is one device name, "cpu", "disk" (read for
// the phase that needs them, freed after) or "default" (on the compute device, as if not
// given). Device lists are an error here.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "placement/module_map.h"

namespace ggdiff::placement {

struct ParamsLocation {
    enum class Kind { Default, Device, Disk };
    Kind kind = Kind::Default;
    std::string device;  // canonical device name when kind == Device ("CPU" for cpu)

    static ParamsLocation on_device(std::string name) { return {Kind::Device, std::move(name)}; }
    static ParamsLocation disk() { return {Kind::Disk, {}}; }
    bool operator==(const ParamsLocation& o) const { return kind == o.kind && device == o.device; }
    bool operator!=(const ParamsLocation& o) const { return !(*this == o); }
};

using ParamsSpec = ModuleMap<ParamsLocation>;

Result<ParamsLocation> parse_params_location(const std::string& value,
                                             const std::vector<std::string>& device_names);
Result<ParamsSpec> parse_params_spec(const std::string& spec,
                                     const std::vector<std::string>& device_names);

std::string to_string(const ParamsLocation& loc);  // "default", "disk" or the device name
std::string to_string(const ParamsSpec& spec);

}  // namespace ggdiff::placement
