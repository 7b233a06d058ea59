// LoRA updates applied at run time: their factors uploaded as f32 tensors next to the
// weights they update (same device), as the table the layers read (WeightAdapter).
#pragma once

#include <ggml-backend.h>

#include <string>
#include <utility>
#include <vector>

#include "runtime/lora_delta.h"
#include "runtime/weight_store.h"

namespace ggdiff {

class AdapterSet {
  public:
    AdapterSet() = default;
    ~AdapterSet() { clear(); }
    AdapterSet(const AdapterSet&) = delete;
    AdapterSet& operator=(const AdapterSet&) = delete;

    // Uploads each (weight, update); the weight's ggml shape gives the tensors' layout and
    // buft_for(weight) their buffer type.
    Status build(const WeightStore& store,
                 const std::vector<std::pair<std::string, const LoraUpdate*>>& updates,
                 const WeightStore::BufferTypeFn& buft_for);
    void clear();

    const WeightStore::AdapterTable& table() const { return table_; }
    size_t bytes() const;

  private:
    ggml_context* ctx_ = nullptr;
    std::vector<ggml_backend_buffer_t> buffers_;
    WeightStore::AdapterTable table_;
};

}  // namespace ggdiff
