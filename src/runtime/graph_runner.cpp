#include "runtime/graph_runner.h"

#include <ggml-alloc.h>

#include <atomic>
#include <cstring>
#include <map>
#include <mutex>

#include "core/log.h"
#include "devices/devices.h"
#include "runtime/cpu_kernels.h"
#include "runtime/graph_profile.h"
#include "runtime/weight_store.h"

namespace ggdiff {
namespace {

constexpr size_t kGraphSize = 32768;

std::mutex g_backend_mutex;
std::map<std::string, ggml_backend_t> g_backends;
thread_local int t_backend_instance = 0;

ggml_backend_t cached_backend(ggml_backend_dev_t dev, int n_threads) {
    std::lock_guard<std::mutex> lock(g_backend_mutex);
    std::string key = ggml_backend_dev_name(dev);
    if (t_backend_instance != 0) key += "#" + std::to_string(t_backend_instance);
    auto it = g_backends.find(key);
    ggml_backend_t b = nullptr;
    if (it != g_backends.end()) {
        b = it->second;
    } else {
        b = ggml_backend_dev_init(dev, nullptr);
        if (!b) return nullptr;
        g_backends[key] = b;
    }
    set_backend_threads(b, n_threads > 0 ? n_threads : default_threads());
    return b;
}

}  // namespace

BackendInstanceScope::BackendInstanceScope(int instance) : previous_(t_backend_instance) {
    t_backend_instance = instance;
}

BackendInstanceScope::~BackendInstanceScope() {
    t_backend_instance = previous_;
}

ggml_tensor* GraphBuilder::declare(ggml_type type, const std::vector<int64_t>& ne, const void* data,
                                   size_t bytes) {
    int64_t d[4] = {1, 1, 1, 1};
    for (size_t i = 0; i < ne.size() && i < 4; ++i) d[i] = ne[i];
    ggml_tensor* t =
        ggml_new_tensor(nn_.ctx, type, static_cast<int>(std::max<size_t>(1, ne.size())), d);
    ggml_set_input(t);
    inputs_.push_back({t, data, bytes});
    return t;
}

ggml_tensor* GraphBuilder::input(const HostTensor& value) {
    // Copied: a pointer to the caller's tensor would dangle if it went away before the run (a
    // named local in a builder helper did).
    return input(HostTensor(value));
}

ggml_tensor* GraphBuilder::input(HostTensor&& value) {
    // Moving a vector keeps its buffer, so the pointer stays valid as f32_keep_ grows.
    f32_keep_.push_back(std::move(value.data));
    const std::vector<float>& kept = f32_keep_.back();
    return declare(GGML_TYPE_F32, value.ne, kept.data(), kept.size() * sizeof(float));
}

ggml_tensor* GraphBuilder::input_i32(const std::vector<int32_t>& value,
                                     const std::vector<int64_t>& ne) {
    i32_keep_.push_back(value);
    const std::vector<int32_t>& kept = i32_keep_.back();
    return declare(GGML_TYPE_I32, ne, kept.data(), kept.size() * sizeof(int32_t));
}

std::vector<ggml_backend_t> cpu_backends(int n_threads) {
    load_backends();
    std::vector<ggml_backend_t> out;
    // With the CPU kernels the BLAS backend has nothing left to do: they call the same
    // OpenBLAS from the CPU backend's threads, without a second thread pool.
    const bool kernels = cpu::kernels_available();
    for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
        ggml_backend_dev_t dev = ggml_backend_dev_get(i);
        if (kernels && std::strcmp(ggml_backend_dev_name(dev), "BLAS") == 0) continue;
        if (ggml_backend_dev_type(dev) == GGML_BACKEND_DEVICE_TYPE_ACCEL) {
            if (ggml_backend_t b = cached_backend(dev, n_threads)) out.push_back(b);
        }
    }
    ggml_backend_dev_t cpu = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    if (cpu) {
        if (ggml_backend_t b = cached_backend(cpu, n_threads)) out.push_back(b);
    }
    return out;
}

Result<ggml_backend_t> backend_for_device(const std::string& name, int n_threads) {
    ggml_backend_dev_t dev = find_device(name);
    if (!dev) return Status::Error("unknown device \"" + name + "\"");
    ggml_backend_t b = cached_backend(dev, n_threads);
    if (!b) return Status::Error("cannot initialize device " + name);
    return b;
}

GraphRunner::GraphRunner(std::vector<ggml_backend_t> backends, std::string label)
    : backends_(std::move(backends)), label_(std::move(label)) {
    bool has_cpu = false;
    for (ggml_backend_t b : backends_) {
        ggml_backend_dev_t d = ggml_backend_get_device(b);
        if (d && ggml_backend_dev_type(d) == GGML_BACKEND_DEVICE_TYPE_CPU) has_cpu = true;
    }
    if (!has_cpu) {
        for (ggml_backend_t b : cpu_backends(-1)) {
            ggml_backend_dev_t d = ggml_backend_get_device(b);
            if (d && ggml_backend_dev_type(d) == GGML_BACKEND_DEVICE_TYPE_CPU)
                backends_.push_back(b);
        }
    }
    // Graphs that run on the CPU alone use the CPU kernels for products, convolutions and
    // attention (weights read as stored, see WeightStore::set_cpu_kernels).
    kernels_ = cpu::kernels_available();
    for (ggml_backend_t b : backends_) {
        ggml_backend_dev_t d = ggml_backend_get_device(b);
        if (!d || ggml_backend_dev_type(d) != GGML_BACKEND_DEVICE_TYPE_CPU) kernels_ = false;
    }
    if (kernels_) GGDIFF_LOG_DEBUG("%s: CPU kernels (OpenBLAS sgemm per thread)", label_.c_str());
    sched_ = new_sched();
}

namespace {

std::atomic<double> g_flops{0.0};
thread_local double t_flops = 0.0;

// Products and convolutions of a graph: the CPU kernels' own counts, and ggml's products
// (convolutions on other backends are im2col products).
double graph_flops(ggml_cgraph* gf) {
    double n = 0.0;
    for (int i = 0; i < ggml_graph_n_nodes(gf); ++i) {
        const ggml_tensor* t = ggml_graph_node(gf, i);
        if (t->op == GGML_OP_MUL_MAT) {
            n += 2.0 * static_cast<double>(ggml_nelements(t)) *
                 static_cast<double>(t->src[0]->ne[0]);
        } else {
            n += cpu::kernel_flops(t);
        }
    }
    return n;
}

}  // namespace

double computed_flops() {
    return g_flops.load();
}

double computed_flops_on_this_thread() {
    return t_flops;
}

ggml_backend_sched_t GraphRunner::new_sched() {
    return ggml_backend_sched_new(backends_.data(), nullptr, static_cast<int>(backends_.size()),
                                  kGraphSize, false, true);
}

void GraphRunner::release_compute() {
    // ggml's scheduler keeps its buffers until it is freed: a new one allocates again on
    // the next run.
    if (!sched_) return;
    ggml_backend_sched_free(sched_);
    sched_ = new_sched();
    n_splits_ = 0;
}

GraphRunner::~GraphRunner() {
    if (sched_) ggml_backend_sched_free(sched_);
}

ggml_context* GraphRunner::build_graph(WeightStore& weights, const BuildFn& build, GraphBuilder& gb,
                                       std::vector<ggml_tensor*>& outs) {
    ggml_init_params p = {
        kGraphSize * ggml_tensor_overhead() + ggml_graph_overhead_custom(kGraphSize, false),
        nullptr, true};
    ggml_context* ctx = ggml_init(p);
    gb.nn_ = BuildCtx{ctx, &weights};
    weights.set_compute_context(ctx);
    {
        cpu::KernelScope scope(kernels_ ? ctx : nullptr);
        KernelChoiceScope choices(ctx, choices_);
        outs = build(gb);
    }
    weights.set_compute_context(nullptr);
    return ctx;
}

Status GraphRunner::declare(WeightStore& weights, const BuildFn& build,
                            const std::function<void(ggml_cgraph*)>& inspect) {
    weights.set_cpu_kernels(kernels_);
    GraphBuilder gb;
    std::vector<ggml_tensor*> outs;
    ggml_context* ctx = build_graph(weights, build, gb, outs);
    if (inspect && weights.status().ok()) {
        ggml_cgraph* gf = ggml_new_graph_custom(ctx, kGraphSize, false);
        for (ggml_tensor* o : outs) ggml_build_forward_expand(gf, o);
        inspect(gf);
    }
    ggml_free(ctx);
    return weights.status();
}

Result<std::vector<HostTensor>> GraphRunner::run(WeightStore& weights, const BuildFn& build) {
    if (!sched_) return Status::Error(label_ + ": cannot create a scheduler for its devices");
    GraphBuilder gb;
    std::vector<ggml_tensor*> outs;
    ggml_context* ctx = build_graph(weights, build, gb, outs);
    if (!weights.status().ok()) {
        ggml_free(ctx);
        return weights.status();
    }
    if (kernels_) cpu::accelerate_mul_mats(ctx, outs);
    ggml_cgraph* gf = new_output_graph(ctx, outs);
    ggml_backend_sched_reset(sched_);
    if (pin_) pin_nodes(gf);
    if (!ggml_backend_sched_alloc_graph(sched_, gf)) {
        ggml_free(ctx);
        return Status::Error(label_ + ": cannot allocate the compute buffers (out of memory?)");
    }
    const int splits = ggml_backend_sched_get_n_splits(sched_);
    if (splits != n_splits_) {
        GGDIFF_LOG_DEBUG("%s: graph of %d nodes in %d splits, %d copies", label_.c_str(),
                         ggml_graph_n_nodes(gf), splits, ggml_backend_sched_get_n_copies(sched_));
    }
    n_splits_ = splits;
    gb.upload_inputs();
    ggml_status status = GGML_STATUS_SUCCESS;
    if (GraphProfile::enabled()) {
        GraphProfile profile(sched_);
        status = ggml_backend_sched_graph_compute(sched_, gf);
        profile.finish(label_, ggml_graph_n_nodes(gf), n_splits_);
    } else {
        status = ggml_backend_sched_graph_compute(sched_, gf);
    }
    if (status != GGML_STATUS_SUCCESS) {
        ggml_free(ctx);
        return Status::Error(label_ + ": graph computation failed");
    }
    count_flops(gf);
    auto results = read_outputs(outs, label_);
    ggml_free(ctx);
    return results;
}

ggml_cgraph* new_output_graph(ggml_context* ctx, const std::vector<ggml_tensor*>& outs) {
    ggml_cgraph* gf = ggml_new_graph_custom(ctx, kGraphSize, false);
    for (ggml_tensor* o : outs) {
        ggml_set_output(o);
        ggml_build_forward_expand(gf, o);
    }
    return gf;
}

void GraphBuilder::upload_inputs() const {
    for (const auto& in : inputs_) ggml_backend_tensor_set(in.tensor, in.data, 0, in.bytes);
}

uint64_t measure_compute_buffer(WeightStore& weights, ggml_cgraph* gf,
                                ggml_backend_buffer_type_t buft) {
    // The allocator skips tensors that have data: weights not in memory yet get a stand-in
    // address for the measurement only.
    std::vector<ggml_tensor*> stand_ins;
    for (const auto& entry : weights.declared()) {
        if (!entry.second->data) {
            entry.second->data = reinterpret_cast<void*>(static_cast<uintptr_t>(4096));
            stand_ins.push_back(entry.second);
        }
    }
    if (!buft) {
        buft = ggml_backend_dev_buffer_type(ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU));
    }
    ggml_gallocr_t probe = ggml_gallocr_new(buft);
    size_t size = 0;
    ggml_gallocr_reserve_n_size(probe, gf, nullptr, nullptr, &size);
    ggml_gallocr_free(probe);
    for (ggml_tensor* t : stand_ins) t->data = nullptr;
    return static_cast<uint64_t>(size);
}

void count_flops(ggml_cgraph* gf) {
    const double flops = graph_flops(gf);
    double seen = g_flops.load();
    while (!g_flops.compare_exchange_weak(seen, seen + flops)) {
    }
    t_flops += flops;
}

Result<std::vector<HostTensor>> read_outputs(const std::vector<ggml_tensor*>& outs,
                                             const std::string& label) {
    std::vector<HostTensor> results;
    for (ggml_tensor* o : outs) {
        if (o->type != GGML_TYPE_F32) return Status::Error(label + ": output is not f32");
        HostTensor h;
        for (int i = 0; i < ggml_n_dims(o); ++i) h.ne.push_back(o->ne[i]);
        h.data.resize(static_cast<size_t>(ggml_nelements(o)));
        ggml_backend_tensor_get(o, h.data.data(), 0, h.data.size() * sizeof(float));
        results.push_back(std::move(h));
    }
    return results;
}

}  // namespace ggdiff
