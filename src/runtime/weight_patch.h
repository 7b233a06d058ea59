// Patching a module's loaded weights in place (LoRA merges) and undoing it.
//
// A patch adds an f32 difference to one weight in the weight's own type and buffer:
// read the weight (from the device when it is not in host memory), widen it to f32, add,
// narrow it back (f16, bf16, f32 or a quantized type) and write it. Only one weight is
// ever widened at a time: merging never holds an f32 copy of the model. Weights used in
// place from the read-only mapped checkpoint get their own memory first. Undoing re-reads
// the patched weights from the checkpoint, so patches never accumulate rounding.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "core/status.h"
#include "runtime/weight_store.h"

namespace ggdiff {

class WeightPatcher {
  public:
    explicit WeightPatcher(WeightStore& store) : store_(store) {}

    // weight += delta, where delta holds the weight's elements in its own order (torch
    // row-major) from element `first` on: all of them, or whole rows of it (a part of a
    // fused weight; only those rows are read, converted and written). The weight must be
    // loaded.
    Status add(const std::string& name, const std::vector<float>& delta, int64_t first = 0);

    // Re-reads every patched weight from the checkpoint (when loaded) and forgets them.
    Status restore();
    // Forgets the patched set without touching memory (the weights were reloaded).
    void forget() { touched_.clear(); }

    const std::set<std::string>& touched() const { return touched_; }

  private:
    WeightStore& store_;
    std::set<std::string> touched_;
};

}  // namespace ggdiff
