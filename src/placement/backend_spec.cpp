#include "placement/backend_spec.h"

#include <algorithm>

namespace ggdiff::placement {

Result<DeviceList> parse_device_list(const std::string& value,
                                     const std::vector<std::string>& device_names) {
    std::vector<std::string> tokens;
    size_t start = 0;
    while (true) {
        const size_t amp = value.find('&', start);
        tokens.push_back(value.substr(start, amp == std::string::npos ? amp : amp - start));
        if (amp == std::string::npos) break;
        start = amp + 1;
    }
    const bool is_list = tokens.size() > 1;
    DeviceList out;
    for (std::string token : tokens) {
        token.erase(0, token.find_first_not_of(" \t"));
        token.erase(token.find_last_not_of(" \t") + 1);
        const std::string lower = to_lower(token);
        if (token.empty()) return Status::Error("empty device name in list " + quoted(value));
        if (lower == "disk")
            return Status::Error(quoted(token) +
                                 " is not a compute device; it is only valid in --params-backend");
        if (lower == "default") {
            if (is_list)
                return Status::Error(quoted(token) + " cannot be part of a device list (" +
                                     quoted(value) + ")");
            return DeviceList{};
        }
        Result<std::string> name = resolve_device_name(token, device_names);
        if (!name) return name.status();
        if (std::find(out.begin(), out.end(), *name) != out.end())
            return Status::Error("device " + quoted(*name) + " listed twice in " + quoted(value));
        out.push_back(*name);
    }
    return out;
}

Result<BackendSpec> parse_backend_spec(const std::string& spec,
                                       const std::vector<std::string>& device_names) {
    return parse_module_map<DeviceList>(
        spec, [&](const std::string& v) { return parse_device_list(v, device_names); });
}

std::string to_string(const DeviceList& devices) {
    return devices.empty() ? std::string("default") : join(devices, "&");
}

std::string to_string(const BackendSpec& spec) {
    return module_map_to_string(spec, [](const DeviceList& d) { return to_string(d); });
}

}  // namespace ggdiff::placement
