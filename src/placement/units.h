// Byte units and their human-readable form, shared by the placement planners.
#pragma once

#include <cstdint>
#include <string>

namespace ggdiff::placement {

inline constexpr uint64_t kMiB = uint64_t(1) << 20;
inline constexpr uint64_t kGiB = uint64_t(1) << 30;

// Bytes as GiB with two decimals: "23.50 GiB".
std::string format_gib(uint64_t bytes);
// "N.N MiB" below 1 GiB, else as format_gib.
std::string format_size(uint64_t bytes);
// A signed GiB amount converted to bytes, rounded to the nearest byte.
int64_t gib_to_bytes(double gib);

}  // namespace ggdiff::placement
