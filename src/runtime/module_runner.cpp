#include "runtime/module_runner.h"

#include <algorithm>
#include <mutex>

#include "core/log.h"
#include "devices/devices.h"
#include "placement/block_index.h"
#include "placement/row_split.h"

namespace ggdiff {
namespace {

bool is_cpu_name(const std::string& name) {
    ggml_backend_dev_t d = find_device(name);
    return d && ggml_backend_dev_type(d) == GGML_BACKEND_DEVICE_TYPE_CPU;
}

ggml_backend_buffer_type_t buft_of_device(const std::string& name) {
    ggml_backend_dev_t d = find_device(name);
    return d ? ggml_backend_dev_buffer_type(d) : nullptr;
}

thread_local ComputeProbe* g_probe = nullptr;

// The weights each single-device module holds on its device while loaded (a --max-vram budget
// is the device's, so a module cut on it leaves room for what the others keep there).
std::mutex g_held_mutex;
std::map<std::string, std::map<const ModuleRunner*, uint64_t>> g_held;

void set_held(const std::string& device, const ModuleRunner* who, uint64_t bytes) {
    std::lock_guard<std::mutex> lock(g_held_mutex);
    if (bytes == 0) {
        auto it = g_held.find(device);
        if (it != g_held.end()) it->second.erase(who);
    } else {
        g_held[device][who] = bytes;
    }
}

uint64_t held_by_others(const std::string& device, const ModuleRunner* who) {
    std::lock_guard<std::mutex> lock(g_held_mutex);
    uint64_t n = 0;
    auto it = g_held.find(device);
    if (it == g_held.end()) return 0;
    for (const auto& [runner, bytes] : it->second) n += runner == who ? 0 : bytes;
    return n;
}

}  // namespace

ComputeProbe::ComputeProbe() : previous_(g_probe) {
    g_probe = this;
}

ComputeProbe::~ComputeProbe() {
    g_probe = previous_;
}

ComputeProbe* ComputeProbe::active() {
    return g_probe;
}

void ComputeProbe::record(const std::string& module, uint64_t bytes) {
    uint64_t& b = bytes_[module];
    b = std::max(b, bytes);
}

ModuleRunner::ModuleRunner(const TensorIndex& index, int weight_type, ModuleDevices placement,
                           int threads, std::string label)
    : index_(index),
      placement_(std::move(placement)),
      threads_(threads),
      label_(std::move(label)),
      weights_(std::make_unique<WeightStore>(index, weight_type)) {}

ModuleRunner::~ModuleRunner() {
    if (!held_device_.empty()) set_held(held_device_, this, 0);
}

void ModuleRunner::note(const std::string& line, bool warn) {
    log_.push_back(line);
    if (warn) {
        GGDIFF_LOG_WARN("%s", line.c_str());
    } else {
        GGDIFF_LOG_INFO("%s", line.c_str());
    }
}

Status ModuleRunner::prepare(const BuildFn& declare) {
    // Backends in priority order; the scheduler adds the CPU as the fallback.
    std::vector<ggml_backend_t> backends;
    std::vector<std::string>& devs = placement_.devices;
    if (devs.size() > 1) {
        auto cpu = std::find_if(devs.begin(), devs.end(), is_cpu_name);
        if (cpu != devs.end()) {
            note(placement_.module + ": the CPU cannot be part of a layer split; running on " +
                     devs[0] + " only (use --params-backend " + placement_.module +
                     "=cpu to keep the weights in host memory)",
                 true);
            devs.resize(1);
        }
    }
    if (devs.empty() || (devs.size() == 1 && is_cpu_name(devs[0]))) {
        backends = cpu_backends(threads_);
        default_buft_ =
            ggml_backend_dev_buffer_type(ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU));
    } else {
        for (const std::string& name : devs) {
            auto b = backend_for_device(name, threads_);
            if (!b.ok()) return b.status().with_context(placement_.module);
            backends.push_back(*b);
        }
        default_buft_ = buft_of_device(devs[0]);
    }
    std::string device_list;
    for (const std::string& d : devs) device_list += (device_list.empty() ? "" : "&") + d;
    GGDIFF_LOG_DEBUG("%s: computes on %s", label_.c_str(),
                     device_list.empty() ? "CPU" : device_list.c_str());
    runner_ = std::make_unique<GraphRunner>(backends, label_);
    runner_->set_kernel_choices(choices_);
    if (ComputeProbe::active()) {
        // Measuring only: the graphs as a GPU builds them, no weight read.
        runner_->disable_cpu_kernels();
        return runner_->declare(*weights_, declare).with_context(label_);
    }
    std::function<void(ggml_cgraph*)> inspect;
    if (devs.size() > 1) inspect = [this](ggml_cgraph* gf) { record_op_support(gf); };
    Status st = runner_->declare(*weights_, declare, inspect);
    if (!st.ok()) return st.with_context(label_);

    if (devs.size() > 1) GGDIFF_TRY(plan_split(backends));
    if (placement_.cut_budget > 0 && placement_.devices.size() > 1) {
        // MISSION: a layer split takes the module's placement; --max-vram only sets the shares.
        note(placement_.module + ": layer split across several devices: --max-vram sets the " +
                 "split shares, graph cutting" +
                 (placement_.stream_layers ? " and --stream-layers are" : " is") +
                 " off for this module",
             placement_.stream_layers);
        placement_.cut_budget = 0;
    }
    if (placement_.cut_budget > 0 && !placement_.devices.empty() &&
        !is_cpu_name(placement_.devices.front())) {
        // Whether the module is cut is known once its graph is measured at the requested size
        // (the first run); until then no weight goes to the device.
        records_ = tensor_records();
        placement::assign_blocks(records_, "", placement_.block_segments);
        segments_ = std::make_unique<SegmentRunner>(
            backends.front(), placement_.module, label_, placement_.cut_budget,
            placement_.stream_layers, placement_.params == ModuleDevices::Params::Disk);
        const std::string device = placement_.devices.front();
        segments_->set_held_by_others([this, device] { return held_by_others(device, this); });
        GGDIFF_LOG_DEBUG("%s: %zu weights, %.1f MiB, cut by --max-vram if they do not fit",
                         label_.c_str(), weights_->count(), weights_->bytes() / 1048576.0);
        return Status::Ok();
    }
    return load_weights();
}

Status ModuleRunner::load_weights() {
    const std::vector<std::string>& devs = placement_.devices;

    // An explicit params device keeps the weights; each phase stages them (every range
    // to its own device) and frees the staged copies after. Params on the one device
    // that computes are simply resident.
    if (placement_.params == ModuleDevices::Params::Device) {
        params_buft_ = buft_of_device(placement_.params_device);
        if (!params_buft_)
            return Status::Error("unknown params device " + placement_.params_device);
        const bool same = devs.size() <= 1 && default_buft_ == params_buft_;
        if (same) placement_.params = ModuleDevices::Params::Compute;
    }
    if (!pin_map_.empty()) {
        runner_->set_pinning([this](const ggml_tensor* w) -> ggml_backend_t {
            auto it = pin_map_.find(w);
            return it == pin_map_.end() ? nullptr : it->second;
        });
    }
    const char* where = placement_.params == ModuleDevices::Params::Disk ? "disk (per phase)"
                        : placement_.params == ModuleDevices::Params::Device
                            ? "params device (staged per phase)"
                            : "compute devices";
    GGDIFF_LOG_DEBUG("%s: %zu weights, %.1f MiB, on %s", label_.c_str(), weights_->count(),
                     weights_->bytes() / 1048576.0, where);
    if (placement_.params == ModuleDevices::Params::Device) {
        return weights_->load_params(params_buft_).with_context(label_);
    }
    if (placement_.params != ModuleDevices::Params::Disk) return load();
    return Status::Ok();
}

void ModuleRunner::record_op_support(ggml_cgraph* gf) {
    std::map<const ggml_tensor*, const std::string*> weight_names;
    for (const auto& [name, t] : weights_->declared()) weight_names[t] = &name;
    std::vector<ggml_backend_dev_t> devs;
    for (const std::string& d : placement_.devices) devs.push_back(find_device(d));
    for (int i = 0; i < ggml_graph_n_nodes(gf); ++i) {
        ggml_tensor* node = ggml_graph_node(gf, i);
        for (int s = 0; s < GGML_MAX_SRC && node->src[s]; ++s) {
            const ggml_tensor* w = node->src[s];
            while (w->view_src) w = w->view_src;
            auto it = weight_names.find(w);
            if (it == weight_names.end() || consumer_op_.count(*it->second)) continue;
            consumer_op_[*it->second] = ggml_op_desc(node);
            for (size_t d = 0; d < devs.size(); ++d) {
                if (devs[d] && !ggml_backend_dev_supports_op(devs[d], node)) {
                    unsupported_[*it->second].push_back(d);
                }
            }
        }
    }
}

std::vector<placement::TensorRecord> ModuleRunner::tensor_records() const {
    std::vector<placement::TensorRecord> records;
    for (const auto& [name, t] : weights_->declared()) {
        placement::TensorRecord r;
        r.name = name;
        r.bytes = ggml_nbytes(t);
        for (int i = 0; i < ggml_n_dims(t); ++i) r.ne.push_back(t->ne[i]);
        r.contiguous = ggml_is_contiguous(t);
        auto op = consumer_op_.find(name);
        if (op != consumer_op_.end()) r.op = op->second;
        records.push_back(std::move(r));
    }
    return records;
}

Status ModuleRunner::plan_split(std::vector<ggml_backend_t>& backends) {
    const std::vector<std::string>& devs = placement_.devices;
    std::vector<placement::TensorRecord> records = tensor_records();
    placement::assign_blocks(records, "", placement_.block_segments);
    std::vector<placement::DeviceInfo> infos;
    for (const std::string& name : devs) {
        DeviceInfo dev;
        dev.dev = find_device(name);
        dev.name = name;
        dev.type = ggml_backend_dev_type(dev.dev);
        ggml_backend_dev_memory(dev.dev, &dev.free, &dev.total);
        placement::DeviceInfo info = placement_info(dev);
        auto ov = placement_.free_override.find(name);
        if (ov != placement_.free_override.end()) info.free_bytes = ov->second;
        infos.push_back(std::move(info));
    }
    if (placement_.row_split) {
        placement::RowSplitPlan row = placement::plan_row_split(placement_.module, records, infos);
        if (row.row_split) {
            // Split buffers: the main device runs the module; block matmul weights are
            // divided by rows across the devices.
            ggml_backend_dev_t main = find_device(devs[0]);
            auto fn = reinterpret_cast<ggml_backend_split_buffer_type_t>(
                device_proc(main, "ggml_backend_split_buffer_type"));
            std::vector<float> split(16, 0.0f);
            float acc = 0.0f;
            for (size_t i = 0; i < row.proportions.size() && i < split.size(); ++i) {
                split[i] = acc;
                acc += static_cast<float>(row.proportions[i]);
            }
            ggml_backend_buffer_type_t sb = fn(0, split.data());
            for (size_t i : row.split_tensors) {
                buft_of_[records[i].name] = sb;
                split_weights_.push_back(records[i].name);
            }
            note(placement::row_split_log_line(row));
            backends.resize(1);
            return Status::Ok();
        }
        note(placement_.module + ": row split is not possible (" + row.reason +
                 "); using layer split",
             true);
    }
    // A weight whose op a device cannot run moves to the first listed device that can.
    auto supports = [this](const placement::TensorRecord& t, size_t device) {
        auto it = unsupported_.find(t.name);
        return it == unsupported_.end() ||
               std::find(it->second.begin(), it->second.end(), device) == it->second.end();
    };
    const uint64_t headroom = placement_.split_headroom > 0 ? placement_.split_headroom
                                                            : placement::kDefaultSplitHeadroom;
    note(string_format("%s: split shares keep %.1f MiB per device for compute (%s)",
                       placement_.module.c_str(), headroom / 1048576.0,
                       placement_.split_headroom > 0
                           ? "measured at the requested size, with its margin"
                           : "the default; nothing measured"));
    auto plan = placement::plan_layer_split(placement_.module, records, infos, supports, headroom);
    if (!plan.ok()) return plan.status();
    for (const std::string& w : placement::layer_split_warnings(*plan)) note(w, true);
    if (!plan->split) {
        note(placement_.module + ": " + plan->fallback_reason, true);
        placement_.devices.resize(1);
        return Status::Ok();
    }
    for (const std::string& line : placement::layer_split_log_lines(*plan)) note(line);
    for (size_t i = 0; i < records.size(); ++i) {
        const size_t dev = plan->tensor_device[i];
        buft_of_[records[i].name] = buft_of_device(devs[dev]);
        pin_map_[weights_->tensor(records[i].name)] = backends[dev];
    }
    split_ = std::move(*plan);
    return Status::Ok();
}

Status ModuleRunner::load() {
    auto buft_for = [this](const std::string& name) {
        auto it = buft_of_.find(name);
        return it == buft_of_.end() ? default_buft_ : it->second;
    };
    Status st = placement_.params == ModuleDevices::Params::Device
                    ? weights_->stage(buft_for)
                    : weights_->load_placed(buft_for);
    if (st.ok() && placement_.devices.size() == 1 && !is_cpu_name(placement_.devices.front())) {
        held_device_ = placement_.devices.front();
        set_held(held_device_, this, weights_->bytes());
    }
    if (st.ok() && on_loaded_) st = on_loaded_();
    return st.with_context(label_);
}

bool ModuleRunner::in_split_buffer(const std::string& name) const {
    return std::find(split_weights_.begin(), split_weights_.end(), name) != split_weights_.end();
}

ggml_backend_buffer_type_t ModuleRunner::buffer_type_for(const std::string& name) const {
    if (in_split_buffer(name)) return default_buft_;
    auto it = buft_of_.find(name);
    return it == buft_of_.end() ? default_buft_ : it->second;
}

Status ModuleRunner::begin_phase() {
    if (segments_ || weights_->loaded()) return Status::Ok();
    return load();
}

void ModuleRunner::end_phase() {
    // Nothing of this module stays in memory until its next phase: its compute buffers
    // are freed, weights read per phase are freed, and the pages of weights used in place
    // from the mapped checkpoint are dropped (the next phase faults them back in).
    if (runner_) runner_->release_compute();
    if (segments_) {
        segments_->release(*weights_);
        return;
    }
    if (placement_.params == ModuleDevices::Params::Disk ||
        placement_.params == ModuleDevices::Params::Device) {
        weights_->release();
        if (!held_device_.empty()) set_held(held_device_, this, 0);
        return;
    }
    const size_t dropped = weights_->release_pages();
    if (dropped > 0) {
        GGDIFF_LOG_DEBUG("%s: end of phase, %.1f MiB of mapped weights released", label_.c_str(),
                         dropped / 1048576.0);
    }
}

Result<std::vector<HostTensor>> ModuleRunner::measure(const BuildFn& build) {
    GraphBuilder gb;
    std::vector<ggml_tensor*> outs;
    ggml_context* ctx = runner_->build_graph(*weights_, build, gb, outs);
    if (!weights_->status().ok()) {
        ggml_free(ctx);
        return weights_->status().with_context(label_);
    }
    ggml_cgraph* gf = new_output_graph(ctx, outs);
    ComputeProbe::active()->record(placement_.module, measure_compute_buffer(*weights_, gf));
    std::vector<HostTensor> zeros;
    for (ggml_tensor* o : outs) {
        HostTensor h;
        for (int i = 0; i < ggml_n_dims(o); ++i) h.ne.push_back(o->ne[i]);
        h.data.assign(static_cast<size_t>(ggml_nelements(o)), 0.0f);
        zeros.push_back(std::move(h));
    }
    ggml_free(ctx);
    return zeros;
}

Result<std::vector<HostTensor>> ModuleRunner::run(const BuildFn& build) {
    if (ComputeProbe::active()) return measure(build);
    if (segments_ && !cut_decided_) {
        auto cut = segments_->plan(*runner_, *weights_, build, records_);
        if (!cut.ok()) return cut.status().with_context(label_);
        cut_decided_ = true;
        log_.insert(log_.end(), segments_->log_lines().begin(), segments_->log_lines().end());
        if (!*cut) {
            // It fits the budget whole: loaded and run the usual way from now on.
            segments_.reset();
            GGDIFF_TRY(load_weights());
        }
    }
    if (segments_) {
        auto out = segments_->run(*runner_, *weights_, build, records_);
        if (!out.ok()) return out.status().with_context(label_);
        return out;
    }
    GGDIFF_TRY(begin_phase());
    return runner_->run(*weights_, build);
}

}  // namespace ggdiff
