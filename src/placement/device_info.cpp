#include "placement/device_info.h"

#include "placement/units.h"

namespace ggdiff::placement {

const char* device_type_name(DeviceType t) {
    switch (t) {
        case DeviceType::Cpu:
            return "cpu";
        case DeviceType::Gpu:
            return "gpu";
        case DeviceType::IGpu:
            return "igpu";
        case DeviceType::Accel:
            return "accel";
    }
    return "?";
}

uint64_t compute_margin(uint64_t compute_bytes) {
    const uint64_t floor = 1ull << 20;
    return compute_bytes / 16 > floor ? compute_bytes / 16 : floor;
}

uint64_t split_weight(uint64_t free_bytes, uint64_t headroom) {
    const uint64_t reduced = free_bytes > headroom ? free_bytes - headroom : 0;
    const uint64_t floor = free_bytes / 8;
    return reduced > floor ? reduced : floor;
}

std::vector<double> split_proportions(const std::vector<DeviceInfo>& devices, uint64_t headroom) {
    std::vector<double> p(devices.size(), 0.0);
    double sum = 0.0;
    for (size_t i = 0; i < devices.size(); ++i) {
        p[i] = static_cast<double>(split_weight(devices[i].free_bytes, headroom));
        sum += p[i];
    }
    for (double& v : p) v = sum > 0.0 ? v / sum : 1.0 / static_cast<double>(devices.size());
    return p;
}

}  // namespace ggdiff::placement
