#include "placement/units.h"

#include <cmath>

#include "core/log.h"

namespace ggdiff::placement {

std::string format_gib(uint64_t bytes) {
    return string_format("%.2f GiB", static_cast<double>(bytes) / static_cast<double>(kGiB));
}

std::string format_size(uint64_t bytes) {
    if (bytes >= kGiB) return format_gib(bytes);
    return string_format("%.1f MiB", static_cast<double>(bytes) / 1048576.0);
}

int64_t gib_to_bytes(double gib) {
    return static_cast<int64_t>(std::llround(gib * static_cast<double>(kGiB)));
}

}  // namespace ggdiff::placement
