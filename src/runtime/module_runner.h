// ModuleRunner: one model module (text encoder, denoiser, VAE) placed on its devices:
// its weights (resident on the compute devices, staged from a params device, or read
// from disk per phase), its layer split or row split, and the runner that computes it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "io/tensor_index.h"
#include "placement/layer_split.h"
#include "runtime/graph_runner.h"
#include "runtime/segment_runner.h"
#include "runtime/weight_store.h"

namespace ggdiff {

struct ModuleDevices {
    std::string module = "module";     // "diffusion", "te", "vae" (for logs)
    std::vector<std::string> devices;  // compute devices in order; empty: the default (CPU)
    enum class Params { Compute, Device, Disk } params = Params::Compute;
    std::string params_device;  // with Params::Device
    bool row_split = false;     // --split-mode row for this module
    // Free bytes to share a split by, per device name (from --max-vram); others: the
    // device's own free memory.
    std::map<std::string, uint64_t> free_override;
    // Graph cutting (--max-vram) on the one compute device: the module's budget there in
    // bytes (0: none) and whether the segments are streamed (--stream-layers).
    uint64_t cut_budget = 0;
    bool stream_layers = false;
    // Compute headroom a layer split keeps per device: the module's compute buffer measured
    // at the requested size plus its margin (0: the 2 GiB default).
    uint64_t split_headroom = 0;
    // The module's block segments in graph order, for layer split and graph cutting (the
    // family recipe's, for the diffusion model); empty: the generic ones
    // (placement/block_index.h).
    std::vector<std::string> block_segments;

    // The same placement on its first device alone, without a split: for a small encoder
    // that shares the text module with a large one (CLIP-L next to bigG or T5).
    ModuleDevices first_device_only() const {
        ModuleDevices d = *this;
        if (d.devices.size() > 1) d.devices.resize(1);
        d.row_split = false;
        return d;
    }
};

// Measuring compute buffers (auto-fit and layer-split headroom): while a ComputeProbe lives
// on this thread, ModuleRunners created here only declare their weights (nothing is read)
// and run() measures the compute buffer of each graph with ggml's allocator instead of
// computing it (zeros come back), as a GPU would build the graph (no CPU kernels).
class ComputeProbe {
  public:
    ComputeProbe();
    ~ComputeProbe();
    ComputeProbe(const ComputeProbe&) = delete;
    ComputeProbe& operator=(const ComputeProbe&) = delete;
    static ComputeProbe* active();
    void record(const std::string& module, uint64_t bytes);
    // The largest compute buffer measured per module ("te", "diffusion", "vae", ...).
    const std::map<std::string, uint64_t>& bytes() const { return bytes_; }

  private:
    ComputeProbe* previous_;
    std::map<std::string, uint64_t> bytes_;
};

class ModuleRunner {
  public:
    ModuleRunner(const TensorIndex& index, int weight_type, ModuleDevices placement, int threads,
                 std::string label);
    ~ModuleRunner();

    // Declares the weights by building the graph once, plans the split, logs the
    // ranges, and loads the weights unless they come from disk per phase.
    Status prepare(const BuildFn& declare);
    // Makes sure the weights are on their devices (reads them for disk params).
    Status begin_phase();
    // With disk params, frees the weights after the phase that used them.
    void end_phase();

    Result<std::vector<HostTensor>> run(const BuildFn& build);

    // Kernel choices for this module's graphs (--fa, --*-conv-direct); set before prepare().
    void set_kernel_choices(const KernelChoices& choices) { choices_ = choices; }

    WeightStore& weights() { return *weights_; }

    // Called each time the weights are read onto their devices after prepare() (every
    // phase with disk or params-device weights): e.g. to merge LoRAs into them again.
    void set_on_loaded(std::function<Status()> fn) { on_loaded_ = std::move(fn); }
    // Whether the weights stay loaded between phases.
    bool resident() const { return placement_.params == ModuleDevices::Params::Compute; }
    // Whether a weight lives in a row-split buffer (cannot be patched in place).
    bool in_split_buffer(const std::string& name) const;
    // Whether the weights may be cut into segments uploaded per evaluation (--max-vram): they
    // are read from the checkpoint for every upload, so they cannot be patched in place.
    bool cuts_graph() const { return segments_ != nullptr; }
    // The graph-cutting runner, while the module is (or may be) cut; nullptr otherwise.
    const SegmentRunner* segments() const { return segments_.get(); }
    // The buffer type a weight is (or will be) loaded into; for split-buffer weights, the
    // main device's.
    ggml_backend_buffer_type_t buffer_type_for(const std::string& name) const;
    const std::optional<placement::LayerSplitPlan>& split_plan() const { return split_; }
    const ModuleDevices& placement() const { return placement_; }
    // The lines logged about where this module runs (for tests and -v).
    const std::vector<std::string>& placement_log() const { return log_; }

  private:
    Status plan_split(std::vector<ggml_backend_t>& backends);
    Result<std::vector<HostTensor>> measure(const BuildFn& build);
    std::vector<placement::TensorRecord> tensor_records() const;
    Status load_weights();
    Status load();
    void note(const std::string& line, bool warn = false);

    const TensorIndex& index_;
    ModuleDevices placement_;
    int threads_;
    std::string label_;
    std::unique_ptr<WeightStore> weights_;
    std::unique_ptr<GraphRunner> runner_;
    std::unique_ptr<SegmentRunner> segments_;
    bool cut_decided_ = false;
    std::vector<placement::TensorRecord> records_;
    std::string held_device_;  // the device this module's loaded weights are counted on
    KernelChoices choices_;
    std::optional<placement::LayerSplitPlan> split_;
    std::map<const ggml_tensor*, ggml_backend_t> pin_map_;
    std::map<std::string, ggml_backend_buffer_type_t> buft_of_;
    ggml_backend_buffer_type_t default_buft_ = nullptr;
    ggml_backend_buffer_type_t params_buft_ = nullptr;
    std::vector<std::string> log_;
    std::function<Status()> on_loaded_;
    std::vector<std::string> split_weights_;
    // Per weight: the op that consumes it and the split devices that cannot run that op.
    std::map<std::string, std::string> consumer_op_;
    std::map<std::string, std::vector<size_t>> unsupported_;
    void record_op_support(ggml_cgraph* gf);
};

}  // namespace ggdiff
