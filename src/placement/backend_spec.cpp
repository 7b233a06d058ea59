#include "placement/backend_spec.h"

#include <algorithm>

namespace ggdiff::placement {
namespace {

// The devices of `value` split at `sep` ('&' or '|'), resolved; `default` alone gives an
// empty list.
Result<DeviceList> parse_devices(const std::string& value, char sep,
                                 const std::vector<std::string>& device_names) {
    std::vector<std::string> tokens;
    size_t start = 0;
    while (true) {
        const size_t at = value.find(sep, start);
        tokens.push_back(value.substr(start, at == std::string::npos ? at : at - start));
        if (at == std::string::npos) break;
        start = at + 1;
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

}  // namespace

Result<DeviceList> parse_device_list(const std::string& value,
                                     const std::vector<std::string>& device_names) {
    return parse_devices(value, '&', device_names);
}

Result<BackendValue> parse_backend_value(const std::string& value,
                                         const std::vector<std::string>& device_names) {
    if (value.find('|') == std::string::npos) {
        auto list = parse_device_list(value, device_names);
        if (!list) return list.status();
        return BackendValue(std::move(list).value());
    }
    if (value.find('&') != std::string::npos) {
        return Status::Error(
            "cannot mix '|' (data parallel: one replica per device) and '&' "
            "(layer split) in " +
            quoted(value) + "; give a module one or the other");
    }
    auto devices = parse_devices(value, '|', device_names);
    if (!devices) return devices.status();
    BackendValue out;
    out.replicas.clear();
    for (const std::string& d : *devices) out.replicas.push_back({d});
    return out;
}

Result<BackendSpec> parse_backend_spec(const std::string& spec,
                                       const std::vector<std::string>& device_names) {
    auto parsed = parse_module_map<BackendValue>(
        spec, [&](const std::string& v) { return parse_backend_value(v, device_names); });
    if (!parsed) return parsed;
    // Replica k takes the k-th device of every '|' list: the lists must agree on k's range.
    std::string first_key;
    const BackendValue* first = nullptr;
    auto check = [&](const std::string& key, const BackendValue& v) -> Status {
        if (!v.data_parallel()) return Status::Ok();
        if (!first) {
            first_key = key;
            first = &v;
            return Status::Ok();
        }
        if (v.replicas.size() == first->replicas.size()) return Status::Ok();
        return Status::Error("'|' lists of different lengths: " + first_key + "=" +
                             to_string(*first) + " has " + std::to_string(first->replicas.size()) +
                             " devices, " + key + "=" + to_string(v) + " has " +
                             std::to_string(v.replicas.size()) +
                             "; every '|' list needs one device per replica");
    };
    if (parsed->all) GGDIFF_TRY(check("all", *parsed->all));
    for (Module m : all_modules()) {
        auto it = parsed->modules.find(m);
        if (it != parsed->modules.end()) GGDIFF_TRY(check(module_name(m), it->second));
    }
    return parsed;
}

std::string to_string(const DeviceList& devices) {
    return devices.empty() ? std::string("default") : join(devices, "&");
}

std::string to_string(const BackendValue& value) {
    if (!value.data_parallel()) return to_string(value.replicas.front());
    std::vector<std::string> parts;
    for (const DeviceList& d : value.replicas) parts.push_back(to_string(d));
    return join(parts, "|");
}

std::string to_string(const BackendSpec& spec) {
    return module_map_to_string(spec, [](const BackendValue& v) { return to_string(v); });
}

}  // namespace ggdiff::placement
