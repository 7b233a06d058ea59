// What the split planners know about a weight: plain values filled in from the
// TensorIndex (after weight type conversion) by the runtime.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ggdiff::placement {

struct TensorRecord {
    std::string name;         // canonical tensor name
    uint64_t bytes = 0;       // bytes on the device (after conversion)
    int block = -1;           // global block index (see block_index.h), -1 = non-block
    std::vector<int64_t> ne;  // ggml order (innermost first)
    bool contiguous = true;
    std::string op;  // op that consumes it ("MUL_MAT", "CONV_2D"); empty = unknown
};

}  // namespace ggdiff::placement
