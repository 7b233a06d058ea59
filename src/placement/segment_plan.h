// Graph cutting under a memory budget (--max-vram for one device, issue 15): a module whose
// weights do not fit the budget runs as segments of consecutive blocks, each loaded before it
// runs and freed after. Non-block weights (embedders, final norms) stay resident for the whole
// phase. With streaming (--stream-layers) the next segment is uploaded while the current one
// computes, so two segments are resident at once and each gets half of what is left; then
// as many leading segments as the rest of the budget allows stay on the device for good
// (residency: `resident_segments`), the others are streamed through the two slots.
//
// Blocks are walked in order; a segment is closed when it holds at least one block and the
// next block would exceed the segment capacity. A single block larger than the capacity makes
// the plan fail, naming the segment and its block, its size, the capacity and the shortfall.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "placement/tensor_record.h"

namespace ggdiff::placement {

struct Segment {
    int begin = 0, end = 0;  // blocks [begin, end)
    uint64_t bytes = 0;      // weight bytes of those blocks
};

struct SegmentPlan {
    std::string module;
    bool cut = false;               // false: everything fits at once (one segment)
    bool streamed = false;          // two segments resident at a time
    uint64_t budget = 0;            // bytes for the module's weights on the device
    uint64_t resident_bytes = 0;    // non-block weights, kept for the whole phase
    uint64_t segment_capacity = 0;  // bytes one segment may hold
    std::vector<Segment> segments;
    int num_blocks = 0;
    // Streaming: segments [0, resident_segments) stay on the device for the whole phase.
    int resident_segments = 0;
    // Bytes of weights uploaded per evaluation once the resident segments are in place.
    uint64_t streamed_bytes() const;
};

// `budget`: what the device may hold of the module's weights (its --max-vram share minus the
// compute reserve). Blocks are numbered 0..n-1 without gaps (block_index.h).
Result<SegmentPlan> plan_segments(const std::string& module,
                                  const std::vector<TensorRecord>& tensors, uint64_t budget,
                                  bool stream);

// "<module> segment k: blocks [a, b), X MiB" per segment (or one line: fits whole).
std::vector<std::string> segment_log_lines(const SegmentPlan& plan);

}  // namespace ggdiff::placement
