// Row split (--split-mode row): the module runs on its main device (the first listed);
// block matmul weights (2-D, contiguous, both dimensions >= 256) live in the backend's
// split buffer type with rows divided in proportion to max(free - 2 GiB, free / 8);
// everything else stays on the main device. Falls back to layer split, saying why, when
// a device's backend has no split buffer type, the devices belong to different
// registries, or no weight qualifies.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "placement/device_info.h"
#include "placement/tensor_record.h"

namespace ggdiff::placement {

enum class RowSplitFallback { None, NoSplitBufferType, MixedRegistries, NoQualifyingWeight };

// A block weight consumed by a matmul (op "MUL_MAT", or unknown op), 2-D, contiguous, both
// dimensions >= 256.
bool is_row_split_candidate(const TensorRecord& t);

struct RowSplitPlan {
    std::string module;
    bool row_split = false;  // false: use layer split instead (see fallback, reason)
    RowSplitFallback fallback = RowSplitFallback::None;
    std::string reason;                 // why not, naming the devices
    std::vector<std::string> devices;   // names in list order; devices[0] is the main device
    std::vector<double> proportions;    // per device, summing to 1 (the rows each one holds)
    std::vector<size_t> split_tensors;  // record indices placed in the split buffer
    uint64_t split_bytes = 0;           // bytes in the split buffer
    uint64_t main_bytes = 0;            // bytes on the main device
};

RowSplitPlan plan_row_split(const std::string& module, const std::vector<TensorRecord>& tensors,
                            const std::vector<DeviceInfo>& devices);

// "diffusion row split: 96 weights (1.50 GiB) over CUDA0 0.60, CUDA1 0.40; main device CUDA0"
// or "diffusion row split is not possible: <reason>; falling back to layer split".
std::string row_split_log_line(const RowSplitPlan& plan);

}  // namespace ggdiff::placement
