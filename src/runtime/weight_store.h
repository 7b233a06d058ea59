// WeightStore: the weights one model module uses, declared by building its graph
// once, validated against the checkpoint (first missing or mis-shaped tensor named),
// then allocated on a device buffer and read from the TensorIndex.
#pragma once

#include <ggml-backend.h>
#include <ggml.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "io/tensor_index.h"
#include "runtime/weights.h"

namespace ggdiff {

class WeightStore : public Weights {
  public:
    // weight_type: a ggml_type for matrices (from --type), or -1 to keep the stored type.
    WeightStore(const TensorIndex& index, int weight_type = -1);
    ~WeightStore() override;
    WeightStore(const WeightStore&) = delete;
    WeightStore& operator=(const WeightStore&) = delete;

    ggml_tensor* get(const std::string& name, const std::vector<int64_t>& ne) override;
    bool has(const std::string& name) const override;
    const std::vector<WeightAdapter>* adapters(const std::string& name) const override;

    // Run-time updates per weight name (see WeightAdapter), owned by the caller; null
    // for none.
    using AdapterTable = std::map<std::string, std::vector<WeightAdapter>>;
    void set_adapters(const AdapterTable* table) { adapters_ = table; }

    // Types for the CPU kernels (runtime/cpu_kernels.h): they read f16 and bf16 weights
    // as stored (widening blocks as they go), so bf16 is kept rather than converted to f16.
    // Takes effect for weights declared afterwards (GraphRunner::declare sets it).
    void set_cpu_kernels(bool on) { cpu_kernels_ = on; }

    // The compute context of the graph being built (reshaped views are made there).
    void set_compute_context(ggml_context* ctx) { compute_ctx_ = ctx; }

    // First missing/mis-shaped weight seen while declaring, if any.
    const Status& status() const { return status_; }

    // Allocates every declared weight in `buft` and reads it from the checkpoint.
    Status load(ggml_backend_buffer_type_t buft);
    // Allocates each weight in the buffer type `buft_for(name)` chooses (one buffer per
    // distinct type, e.g. one per device of a layer split) and reads it.
    using BufferTypeFn = std::function<ggml_backend_buffer_type_t(const std::string& name)>;
    Status load_placed(const BufferTypeFn& buft_for);
    bool loaded() const { return !buffers_.empty(); }
    // Explicit params device: keeps a copy of every weight in `params_buft` (read from
    // the checkpoint once); stage() then places the weights in the buffers `buft_for`
    // picks (each range on its device) by copying from that copy, and release() frees
    // only the staged buffers.
    Status load_params(ggml_backend_buffer_type_t params_buft);
    Status stage(const BufferTypeFn& buft_for);
    // The tensor of a declared weight (nullptr if not declared).
    ggml_tensor* tensor(const std::string& name) const;
    // Frees the device buffer (weights must be loaded again before use).
    void release();

    // Drops the pages of the weights used in place from the mapped file from this process's
    // memory (the weights stay usable: the next use reads them again, from the page cache
    // or the file). Returns their bytes.
    size_t release_pages();

    size_t bytes() const;
    size_t count() const { return tensors_.size(); }

    // For weight patching (runtime/weight_patch.h):
    const TensorIndex& index() const { return index_; }
    // The checkpoint tensor a declared weight is read from (nullptr if none).
    const TensorInfo* source(const std::string& name) const;
    // Whether the weight is used in place from the read-only mapped checkpoint.
    bool in_mapped_file(const std::string& name) const;
    // Gives mapped weights their own (writable) host memory, with the same contents.
    Status detach(const std::vector<std::string>& names);
    // Declared tensors in declaration order: (canonical name, ggml tensor).
    const std::vector<std::pair<std::string, ggml_tensor*>>& declared() const { return order_; }

  private:
    int choose_type(const TensorInfo& info, size_t n_dims) const;

    const TensorIndex& index_;
    int weight_type_;
    bool cpu_kernels_ = false;
    ggml_context* wctx_ = nullptr;
    ggml_context* compute_ctx_ = nullptr;
    std::vector<ggml_backend_buffer_t> buffers_;
    std::vector<ggml_backend_buffer_t> mapped_buffers_;  // the subset of buffers_ over the file
    using TensorList = std::vector<std::pair<std::string, ggml_tensor*>>;
    Status allocate(const TensorList& list, const BufferTypeFn& buft_for,
                    std::vector<ggml_backend_buffer_t>& out);
    Status read_into(const TensorList& list);
    ggml_context* params_ctx_ = nullptr;
    TensorList params_order_;
    std::vector<ggml_backend_buffer_t> params_buffers_;
    std::map<std::string, ggml_tensor*> tensors_;
    std::vector<std::pair<std::string, ggml_tensor*>> order_;
    std::map<std::string, const TensorInfo*> infos_;
    Status status_;
    const AdapterTable* adapters_ = nullptr;
};

}  // namespace ggdiff
