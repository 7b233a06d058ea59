// --backend SPEC: "DEVICE" or "module=DEVICE,..." with all= as the default for every
// module. DEVICE is a device name (case-insensitive, stored in its canonical spelling),
// "default" (the device ggdiff would pick), a layer-split list "dev0&dev1", or a
// data-parallel list "dev0|dev1" (one replica of the module per device; see
// placement/data_parallel.h).
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "placement/module_map.h"

namespace ggdiff::placement {

// Devices of one module; empty means the default device.
using DeviceList = std::vector<std::string>;

// One module's --backend value: the device list of each data-parallel replica. Without '|'
// there is one list ("CUDA0", "CUDA0&CUDA1", or empty for the default device), which every
// replica uses; "RPC0|RPC1" gives one single-device list per replica. A plain DeviceList
// converts to the one-list value.
struct BackendValue {
    std::vector<DeviceList> replicas;

    // Implicit: a device list is the value of one replica.
    BackendValue(DeviceList devices = {}) : replicas{std::move(devices)} {}
    // Whether the value is a '|' list (more than one replica).
    bool data_parallel() const { return replicas.size() > 1; }
    // The devices replica k computes on: its own entry of a '|' list, else the one list.
    const DeviceList& for_replica(size_t k) const {
        return data_parallel() ? replicas.at(k) : replicas.front();
    }
    friend bool operator==(const BackendValue& a, const BackendValue& b) {
        return a.replicas == b.replicas;
    }
    friend bool operator!=(const BackendValue& a, const BackendValue& b) { return !(a == b); }
};
using BackendSpec = ModuleMap<BackendValue>;

// A layer-split value: "CUDA0", "default", "CUDA0&CUDA1". Errors name the token: unknown
// device, "default" inside a list, "disk" (only for --params-backend), a device listed twice.
Result<DeviceList> parse_device_list(const std::string& value,
                                     const std::vector<std::string>& device_names);
// Any value: a parse_device_list value or a '|' list "RPC0|RPC1" (the same token errors;
// '&' and '|' in one value is an error).
Result<BackendValue> parse_backend_value(const std::string& value,
                                         const std::vector<std::string>& device_names);
// The whole spec. Every '|' list in it must have the same number of devices (one per
// replica); the error names the two that differ.
Result<BackendSpec> parse_backend_spec(const std::string& spec,
                                       const std::vector<std::string>& device_names);

std::string to_string(const DeviceList& devices);  // "default" or "A&B"
std::string to_string(const BackendValue& value);  // as DeviceList, or "A|B"
std::string to_string(const BackendSpec& spec);

}  // namespace ggdiff::placement
