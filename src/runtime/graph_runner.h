// GraphRunner: builds a compute graph from a callback, allocates it on one device
// (or several through ggml_backend_sched), uploads inputs, computes, and returns
// host tensors. Compute buffers are kept and reused between runs until release_compute().
#pragma once

#include <ggml-backend.h>
#include <ggml.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/host_tensor.h"
#include "core/status.h"
#include "runtime/kernel_choices.h"
#include "runtime/weights.h"

namespace ggdiff {

class WeightStore;

// What a graph builder gets: the compute context, the weights, and a way to declare
// inputs whose data the runner uploads after allocation.
class GraphBuilder {
  public:
    BuildCtx& nn() { return nn_; }
    ggml_context* ctx() { return nn_.ctx; }
    // A float input of the host tensor's shape. The builder keeps the values (a copy, or the
    // moved tensor's own buffer) until they are uploaded before compute, so the caller's tensor
    // may go away or change once this returns.
    ggml_tensor* input(const HostTensor& value);
    ggml_tensor* input(HostTensor&& value);
    // An int32 input (token ids, positions); the builder keeps a copy.
    ggml_tensor* input_i32(const std::vector<int32_t>& value, const std::vector<int64_t>& ne);

    // Copies the declared inputs into their (allocated) tensors.
    void upload_inputs() const;

  private:
    friend class GraphRunner;
    struct Pending {
        ggml_tensor* tensor;
        const void* data;
        size_t bytes;
    };
    ggml_tensor* declare(ggml_type type, const std::vector<int64_t>& ne, const void* data,
                         size_t bytes);
    BuildCtx nn_{nullptr, nullptr};
    std::vector<Pending> inputs_;
    std::vector<std::vector<int32_t>> i32_keep_;
    std::vector<std::vector<float>> f32_keep_;
};

// Returns the output tensor(s) of the graph.
using BuildFn = std::function<std::vector<ggml_tensor*>(GraphBuilder&)>;

class GraphRunner {
  public:
    // backends: the devices to compute on, in priority order; the CPU backend is
    // appended automatically as the scheduler's fallback if missing.
    GraphRunner(std::vector<ggml_backend_t> backends, std::string label);
    ~GraphRunner();
    GraphRunner(const GraphRunner&) = delete;
    GraphRunner& operator=(const GraphRunner&) = delete;

    // Declares the weights of a graph without computing it (the first build of a
    // module); the store's status() then says whether the checkpoint fits.
    // `inspect`, if given, sees the declared graph (no data) before it is freed.
    Status declare(WeightStore& weights, const BuildFn& build,
                   const std::function<void(ggml_cgraph*)>& inspect = {});

    // Builds, allocates and computes; returns every output as a host tensor.
    Result<std::vector<HostTensor>> run(WeightStore& weights, const BuildFn& build);

    // Layer split: the backend that computes the ops of each weight (nullptr: no
    // preference). Each weightless op then runs on the backend of the most recent
    // weight before it in graph order; views are left to the scheduler.
    using PinFn = std::function<ggml_backend_t(const ggml_tensor* weight)>;
    void set_pinning(PinFn fn) { pin_ = std::move(fn); }

    // Kernel choices for the graphs this runner builds (see kernel_choices.h).
    void set_kernel_choices(const KernelChoices& choices) { choices_ = choices; }

    // Frees the compute buffers kept between runs (the next run allocates them again).
    void release_compute();

    // Builds the graph in a new no-alloc context (returned; the caller frees it) with this
    // runner's kernel choices; `outs` receives the outputs (for runners of their own, such
    // as SegmentRunner).
    ggml_context* build_graph(WeightStore& weights, const BuildFn& build, GraphBuilder& gb,
                              std::vector<ggml_tensor*>& outs);

    const std::string& label() const { return label_; }
    int last_n_splits() const { return n_splits_; }
    // Whether this runner's graphs use the CPU kernels (runtime/cpu_kernels.h): all of
    // its backends are CPU backends and the kernels are available.
    bool uses_cpu_kernels() const { return kernels_; }
    // Builds graphs without the CPU kernels (as on other devices; for measuring).
    void disable_cpu_kernels() { kernels_ = false; }

  private:
    std::vector<ggml_backend_t> backends_;
    ggml_backend_sched_t sched_ = nullptr;
    std::string label_;
    int n_splits_ = 0;
    PinFn pin_;
    KernelChoices choices_;
    bool kernels_ = false;

    void pin_nodes(ggml_cgraph* gf);
    ggml_backend_sched_t new_sched();
};

// A new graph in `ctx` computing `outs`, each marked as an output.
ggml_cgraph* new_output_graph(ggml_context* ctx, const std::vector<ggml_tensor*>& outs);
// The outputs of a computed graph as host tensors (f32 outputs only).
Result<std::vector<HostTensor>> read_outputs(const std::vector<ggml_tensor*>& outs,
                                             const std::string& label);
// The compute buffer ggml's allocator lays out for `gf` in the CPU buffer type (weights
// without memory get a stand-in address for the measurement; nothing is read or written).
uint64_t measure_compute_buffer(WeightStore& weights, ggml_cgraph* gf,
                                ggml_backend_buffer_type_t buft = nullptr);
// Adds a computed graph's products, convolutions and attention to computed_flops().
void count_flops(ggml_cgraph* gf);

// Floating-point operations of the matrix products, convolutions and attention of every
// graph computed so far in this process (monotonic; differences give a phase's count).
double computed_flops();
// The same for the graphs computed on the calling thread (a data-parallel replica counts
// its own phases while the others compute).
double computed_flops_on_this_thread();

// The backends below are cached per device and per instance. A ggml backend cannot compute
// on two threads at once (the CPU backend's work buffer, an RPC connection), so each
// data-parallel replica takes its backends (its devices and its CPU fallback) as its own
// instance: while a BackendInstanceScope is alive, this thread gets instance `instance`
// (0 outside any scope).
class BackendInstanceScope {
  public:
    explicit BackendInstanceScope(int instance);
    ~BackendInstanceScope();
    BackendInstanceScope(const BackendInstanceScope&) = delete;
    BackendInstanceScope& operator=(const BackendInstanceScope&) = delete;

  private:
    int previous_;
};

// Backends for plain CPU compute: the CPU backend, preceded by BLAS when present and the
// CPU kernels (runtime/cpu_kernels.h) are not available.
// Owned by a process-wide cache; threads applied to both.
std::vector<ggml_backend_t> cpu_backends(int n_threads);
// A backend for a named device (cached per device name and instance).
Result<ggml_backend_t> backend_for_device(const std::string& name, int n_threads);

}  // namespace ggdiff
