#include "placement/max_vram.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "core/log.h"
#include "placement/spec_text.h"
#include "placement/units.h"

namespace ggdiff::placement {
namespace {

Result<double> parse_gib(const std::string& value) {
    const char* begin = value.c_str();
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(begin, &end);
    if (end == begin || *end != '\0' || errno == ERANGE || !std::isfinite(v) || std::fabs(v) > 1e6)
        return Status::Error("bad --max-vram value " + quoted(value) +
                             " (expected GiB, e.g. 8 or -2)");
    if (v == 0.0)
        return Status::Error("--max-vram value " + quoted(value) +
                             " is zero (give a positive budget or a negative margin in GiB)");
    return v;
}

std::string format_gib_value(double v) {
    return string_format("%g", v);
}

}  // namespace

std::optional<double> MaxVramSpec::gib_for(const std::string& device) const {
    const std::string lower = to_lower(device);
    for (const auto& [name, gib] : per_device) {
        if (to_lower(name) == lower) return gib;
    }
    return all_gib;
}

Result<MaxVramSpec> parse_max_vram(const std::string& spec,
                                   const std::vector<std::string>& device_names) {
    auto entries = split_spec(spec);
    if (!entries) return entries.status();
    MaxVramSpec out;
    for (const SpecEntry& e : *entries) {
        if (e.key.empty() || fold_name(e.key) == "all") {
            if (out.all_gib) return Status::Error(quoted("all") + " given twice");
            Result<double> gib = parse_gib(e.value);
            if (!gib) return gib.status();
            out.all_gib = *gib;
            continue;
        }
        Result<std::string> name = resolve_device_name(e.key, device_names);
        if (!name) return name.status();
        for (const auto& entry : out.per_device) {
            if (entry.first == *name)
                return Status::Error("device " + quoted(*name) + " given twice");
        }
        Result<double> gib = parse_gib(e.value);
        if (!gib) return gib.status();
        out.per_device.emplace_back(*name, *gib);
    }
    return out;
}

std::string to_string(const MaxVramSpec& spec) {
    if (spec.all_gib && spec.per_device.empty()) return format_gib_value(*spec.all_gib);
    std::vector<std::string> parts;
    if (spec.all_gib) parts.push_back("all=" + format_gib_value(*spec.all_gib));
    for (const auto& [name, gib] : spec.per_device)
        parts.push_back(name + "=" + format_gib_value(gib));
    return join(parts, ",");
}

uint64_t device_budget(const DeviceInfo& device, const MaxVramSpec& max_vram) {
    const int64_t free = static_cast<int64_t>(device.free_bytes);
    int64_t budget;
    if (auto gib = max_vram.gib_for(device.name)) {
        const int64_t bytes = gib_to_bytes(*gib);
        budget = bytes > 0 ? std::min(bytes, free) : free + bytes;
    } else {
        budget = free - static_cast<int64_t>(512 * kMiB);
    }
    return budget > 0 ? static_cast<uint64_t>(budget) : 0;
}

uint64_t split_free_bytes(const DeviceInfo& device, const MaxVramSpec& max_vram) {
    return max_vram.gib_for(device.name) ? device_budget(device, max_vram) : device.free_bytes;
}

}  // namespace ggdiff::placement
