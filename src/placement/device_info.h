// What the planners know about a device: plain values filled in by src/devices.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ggdiff::placement {

// Mirrors ggml's device types; Gpu and IGpu count as "GPU-type" for auto-fit (RPC devices
// report themselves as GPUs).
enum class DeviceType { Cpu, Gpu, IGpu, Accel };

inline bool is_gpu_type(DeviceType t) {
    return t == DeviceType::Gpu || t == DeviceType::IGpu;
}
const char* device_type_name(DeviceType t);

struct DeviceInfo {
    std::string name;  // as printed by --list-devices ("CUDA0", "RPC1", "CPU")
    DeviceType type = DeviceType::Gpu;
    uint64_t free_bytes = 0;        // free memory now (for splits: capped by --max-vram if given)
    uint64_t total_bytes = 0;       // informational
    std::string registry;           // the backend registry the device belongs to ("CUDA", "RPC")
    bool has_split_buffer = false;  // the registry offers ggml_backend_split_buffer_type
};

// The compute headroom a split keeps per device when nothing better is known.
constexpr uint64_t kDefaultSplitHeadroom = 2ull << 30;

// Splits shares of a device: max(free - headroom, free / 8); the headroom is 2 GiB, or the
// module's compute buffer measured at the requested size plus compute_margin. Used by layer
// and row split.
uint64_t split_weight(uint64_t free_bytes, uint64_t headroom = kDefaultSplitHeadroom);
// Each device's fraction of split_weight over all devices (equal if all weights are 0).
std::vector<double> split_proportions(const std::vector<DeviceInfo>& devices,
                                      uint64_t headroom = kDefaultSplitHeadroom);

// Bytes kept free next to a measured compute buffer: ggml's allocator lays a graph out
// exactly, but a device adds its own per-buffer rounding and bookkeeping (CUDA's pool
// granularity, the RPC server's allocation alignment, buffer-type alignment differing from
// the CPU's the figure was measured with, inputs copied in separately); 1/16 of the buffer,
// at least 1 MiB, covers those without giving back much of a small card.
uint64_t compute_margin(uint64_t compute_bytes);

}  // namespace ggdiff::placement
