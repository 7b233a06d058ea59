// Layer split: a module assigned several devices spreads its numbered blocks over them in
// contiguous ranges (MISSION.md, "Layer split").
//
// Shares are proportional to max(free - 2 GiB, free / 8). Non-block weights stay on the
// first (main) device. Each device's block budget is its share of all bytes minus the
// non-block bytes it holds. Blocks are walked in order; a device is closed when it
// already holds something and the next block would exceed its budget; the last device
// takes the rest. A weight whose op its device cannot run moves to the first listed
// device that can.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "placement/device_info.h"
#include "placement/tensor_record.h"

namespace ggdiff::placement {

// Whether devices[device] can run the op that consumes `tensor`.
using OpSupport = std::function<bool(const TensorRecord& tensor, size_t device)>;

struct LayerRange {
    size_t device = 0;
    int begin = 0;             // first block index
    int end = 0;               // one past the last; begin == end: no blocks
    uint64_t block_bytes = 0;  // bytes of the blocks in [begin, end) (before op moves)
    uint64_t bytes = 0;        // everything the device holds after op moves
};

// A weight moved off its planned device because the op is not supported there.
struct TensorMove {
    size_t tensor = 0;  // index into the records
    std::string name, op;
    size_t from = 0;
    bool moved = false;  // false: no listed device supports the op; it stays (CPU fallback)
    size_t to = 0;
};

struct LayerSplitPlan {
    std::string module;
    std::vector<std::string> devices;   // names, in list order
    bool split = false;                 // false: everything on devices[0]
    std::string fallback_reason;        // why not split (when split is false)
    std::vector<double> shares;         // per device
    std::vector<LayerRange> ranges;     // per device (when split)
    std::vector<size_t> tensor_device;  // per record: index into devices
    std::vector<TensorMove> moves;
    int num_blocks = 0;
};

// Errors only for unusable input (no devices, a device named twice). A module without
// blocks, or a CPU device in the list, is a plan with split == false and the reason.
// `supports` may be empty (every device runs everything).
Result<LayerSplitPlan> plan_layer_split(const std::string& module,
                                        const std::vector<TensorRecord>& tensors,
                                        const std::vector<DeviceInfo>& devices,
                                        const OpSupport& supports = {},
                                        uint64_t headroom = kDefaultSplitHeadroom);

// "<module> layer split: <device> <- blocks [a, b)" per device, or one line saying why the
// module falls back to its first device.
std::vector<std::string> layer_split_log_lines(const LayerSplitPlan& plan);
// Warnings for op moves: "diffusion: tensor \"x\" (op CONV_2D) is not supported on
// \"RPC1\"; moved to \"RPC0\"".
std::vector<std::string> layer_split_warnings(const LayerSplitPlan& plan);

}  // namespace ggdiff::placement
