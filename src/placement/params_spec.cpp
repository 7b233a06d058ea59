#include "placement/params_spec.h"

namespace ggdiff::placement {

Result<ParamsLocation> parse_params_location(const std::string& value,
                                             const std::vector<std::string>& device_names) {
    if (value.find_first_of("&|") != std::string::npos)
        return Status::Error("device lists are not allowed in --params-backend (" + quoted(value) +
                             "); give one device, cpu or disk");
    const std::string lower = to_lower(value);
    if (lower == "disk") return ParamsLocation::disk();
    if (lower == "default") return ParamsLocation{};
    Result<std::string> name = resolve_device_name(value, device_names);
    if (!name) return name.status();
    return ParamsLocation::on_device(*name);
}

Result<ParamsSpec> parse_params_spec(const std::string& spec,
                                     const std::vector<std::string>& device_names) {
    return parse_module_map<ParamsLocation>(
        spec, [&](const std::string& v) { return parse_params_location(v, device_names); });
}

std::string to_string(const ParamsLocation& loc) {
    switch (loc.kind) {
        case ParamsLocation::Kind::Default:
            return "default";
        case ParamsLocation::Kind::Disk:
            return "disk";
        case ParamsLocation::Kind::Device:
            return loc.device;
    }
    return "?";
}

std::string to_string(const ParamsSpec& spec) {
    return module_map_to_string(spec, [](const ParamsLocation& l) { return to_string(l); });
}

}  // namespace ggdiff::placement
