// --backend SPEC: "DEVICE" or "module=DEVICE,..." with all= as the default for every
// module. DEVICE is a device name (case-insensitive, stored in its canonical spelling),
// "default" (the device ggdiff would pick), or a layer-split list "dev0&dev1".
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "placement/module_map.h"

namespace ggdiff::placement {

// Devices of one module; empty means the default device.
using DeviceList = std::vector<std::string>;
using BackendSpec = ModuleMap<DeviceList>;

// One value: "CUDA0", "default", "CUDA0&CUDA1". Errors name the token: unknown device,
// "default" inside a list, "disk" (only for --params-backend), a device listed twice.
Result<DeviceList> parse_device_list(const std::string& value,
                                     const std::vector<std::string>& device_names);
Result<BackendSpec> parse_backend_spec(const std::string& spec,
                                       const std::vector<std::string>& device_names);

std::string to_string(const DeviceList& devices);  // "default" or "A&B"
std::string to_string(const BackendSpec& spec);

}  // namespace ggdiff::placement
