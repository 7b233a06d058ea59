// Test-only helpers for the VAE suite: deterministic random weights held in host memory,
// an nn::Weights over them, a one-shot CPU graph runner, .npy writing and the Python
// reference runner.
#pragma once

#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/host_tensor.h"
#include "core/status.h"
#include "nn/weights.h"
#include "runtime/cpu_kernels.h"

namespace vae_test {

using ggdiff::HostTensor;
using ggdiff::Result;
using ggdiff::Status;
using Shapes = std::vector<std::pair<std::string, std::vector<int64_t>>>;

// splitmix64 + Box-Muller: the same numbers on every platform.
class Rng {
  public:
    explicit Rng(uint64_t seed) : s_(seed) {}
    uint64_t next() {
        uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    double uniform() {
        return (static_cast<double>(next() >> 11) + 0.5) * (1.0 / 9007199254740992.0);
    }
    float normal() {
        const double u1 = uniform(), u2 = uniform();
        return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) *
                                  std::cos(6.283185307179586 * u2));
    }

  private:
    uint64_t s_;
};

inline HostTensor random_tensor(std::vector<int64_t> ne, uint64_t seed, float scale = 1.0f) {
    HostTensor t(std::move(ne));
    Rng rng(seed);
    for (float& v : t.data) v = scale * rng.normal();
    return t;
}

struct HostWeight {
    std::vector<int64_t> shape;  // torch order
    std::vector<float> data;
};

// Weights drawn like shared/tools/make_fixture.py: norm scales 1 + 0.05 N, biases 0.02 N,
// kernels N / sqrt(fan_in) (halved on residual outputs).
inline std::map<std::string, HostWeight> random_weights(const Shapes& shapes, uint64_t seed) {
    std::map<std::string, HostWeight> out;
    Rng rng(seed);
    for (const auto& [name, shape] : shapes) {
        HostWeight w{shape, {}};
        int64_t n = 1;
        for (int64_t d : shape) n *= d;
        w.data.resize(static_cast<size_t>(n));
        const bool is_norm = name.find("norm") != std::string::npos;
        int64_t fan_in = 1;
        for (size_t i = 1; i < shape.size(); ++i) fan_in *= shape[i];
        const bool residual = name.find("conv2") != std::string::npos ||
                              name.find("proj_out") != std::string::npos ||
                              name.find("conv.4") != std::string::npos;
        for (float& v : w.data) {
            const float z = rng.normal();
            if (shape.size() == 1) {
                v = is_norm && name.size() > 7 && name.compare(name.size() - 7, 7, ".weight") == 0
                        ? 1.0f + 0.05f * z
                        : 0.02f * z;
            } else {
                v = z * (residual ? 0.5f : 1.0f) / std::sqrt(static_cast<float>(fan_in));
            }
        }
        out[name] = std::move(w);
    }
    return out;
}

// nn::Weights over host arrays: get() makes a tensor of the requested shape in its own
// no-alloc context (same element count as stored, else an error is recorded); upload()
// allocates them on a backend and copies the data. Matrices may be stored as F16.
class HostWeights : public ggdiff::nn::Weights {
  public:
    explicit HostWeights(const std::map<std::string, HostWeight>& w, bool f16 = false)
        : w_(w), f16_(f16) {
        ggml_init_params p = {ggml_tensor_overhead() * 4096, nullptr, true};
        ctx_ = ggml_init(p);
    }
    ~HostWeights() override {
        if (buf_) ggml_backend_buffer_free(buf_);
        ggml_free(ctx_);
    }

    ggml_tensor* get(const std::string& name, const std::vector<int64_t>& ne) override {
        requested_.insert(name);
        auto done = made_.find(name);
        if (done != made_.end()) return done->second;
        int64_t n = 1;
        for (int64_t d : ne) n *= d;
        auto it = w_.find(name);
        if (it == w_.end()) {
            if (status_.ok()) status_ = Status::Error("missing weight " + name);
        } else if (static_cast<int64_t>(it->second.data.size()) != n) {
            if (status_.ok()) status_ = Status::Error("weight " + name + " has another size");
        }
        const ggml_type type = f16_ && ne.size() >= 2 ? GGML_TYPE_F16 : GGML_TYPE_F32;
        int64_t dims[4] = {1, 1, 1, 1};
        for (size_t i = 0; i < ne.size() && i < 4; ++i) dims[i] = ne[i];
        ggml_tensor* t =
            ggml_new_tensor(ctx_, type, static_cast<int>(std::max<size_t>(ne.size(), 1)), dims);
        made_[name] = t;
        return t;
    }
    bool has(const std::string& name) const override { return w_.count(name) != 0; }

    Status upload(ggml_backend_t backend) {
        if (!status_.ok()) return status_;
        buf_ = ggml_backend_alloc_ctx_tensors(ctx_, backend);
        if (!buf_) return Status::Error("weight allocation failed");
        for (const auto& [name, t] : made_) {
            const std::vector<float>& src = w_.at(name).data;
            if (t->type == GGML_TYPE_F16) {
                std::vector<ggml_fp16_t> h(src.size());
                ggml_fp32_to_fp16_row(src.data(), h.data(), static_cast<int64_t>(src.size()));
                ggml_backend_tensor_set(t, h.data(), 0, h.size() * sizeof(ggml_fp16_t));
            } else {
                ggml_backend_tensor_set(t, src.data(), 0, src.size() * sizeof(float));
            }
        }
        return Status::Ok();
    }
    const std::set<std::string>& requested() const { return requested_; }

  private:
    const std::map<std::string, HostWeight>& w_;
    bool f16_;
    ggml_context* ctx_ = nullptr;
    ggml_backend_buffer_t buf_ = nullptr;
    std::map<std::string, ggml_tensor*> made_;
    std::set<std::string> requested_;
    Status status_;
};

using Builder =
    std::function<ggml_tensor*(ggml_tensor* input, ggml_context* ctx, ggdiff::nn::Weights* w)>;

inline ggml_backend_t cpu_backend() {
    static ggml_backend_t backend = [] {
        ggml_backend_load_all();
        ggml_backend_t b = ggml_backend_init_by_type(GGML_BACKEND_DEVICE_TYPE_CPU, nullptr);
        if (b) {
            ggml_backend_dev_t dev = ggml_backend_get_device(b);
            ggml_backend_reg_t reg = dev ? ggml_backend_dev_backend_reg(dev) : nullptr;
            auto set_threads =
                reg ? reinterpret_cast<void (*)(ggml_backend_t, int)>(
                          ggml_backend_reg_get_proc_address(reg, "ggml_backend_set_n_threads"))
                    : nullptr;
            if (set_threads) set_threads(b, 2);
        }
        return b;
    }();
    return backend;
}

// Builds the graph with `build` on one input, computes it on the CPU backend and returns
// the output.
inline Result<HostTensor> run_graph(const std::map<std::string, HostWeight>& weights,
                                    const HostTensor& input, const Builder& build, bool f16 = false,
                                    std::set<std::string>* requested = nullptr) {
    ggml_backend_t backend = cpu_backend();
    if (!backend) return Status::Error("no CPU backend");
    constexpr size_t kGraphSize = 8192;
    ggml_init_params p = {
        ggml_tensor_overhead() * kGraphSize * 2 + ggml_graph_overhead_custom(kGraphSize, false),
        nullptr, true};
    ggml_context* ctx = ggml_init(p);
    HostWeights w(weights, f16);
    int64_t dims[4] = {input.dim(0), input.dim(1), input.dim(2), input.dim(3)};
    ggml_tensor* in = ggml_new_tensor(ctx, GGML_TYPE_F32, 4, dims);
    ggml_set_input(in);
    ggml_tensor* out = build(in, ctx, &w);
    ggml_set_output(out);
    ggml_cgraph* gf = ggml_new_graph_custom(ctx, kGraphSize, false);
    ggml_build_forward_expand(gf, out);
    if (requested) *requested = w.requested();

    Status st = w.upload(backend);
    ggml_gallocr_t galloc = nullptr;
    HostTensor result;
    if (st.ok()) {
        galloc = ggml_gallocr_new(ggml_backend_get_default_buffer_type(backend));
        if (!ggml_gallocr_alloc_graph(galloc, gf)) st = Status::Error("graph allocation failed");
    }
    if (st.ok()) {
        ggml_backend_tensor_set(in, input.ptr(), 0, input.data.size() * sizeof(float));
        if (ggml_backend_graph_compute(backend, gf) != GGML_STATUS_SUCCESS) {
            st = Status::Error("compute failed");
        }
    }
    if (st.ok()) {
        result = HostTensor({out->ne[0], out->ne[1], out->ne[2], out->ne[3]});
        ggml_backend_tensor_get(out, result.ptr(), 0, result.data.size() * sizeof(float));
    }
    if (galloc) ggml_gallocr_free(galloc);
    ggml_free(ctx);
    if (!st.ok()) return st;
    return result;
}

// A graph with several inputs and outputs: `build(ctx, weights, inputs)` gets one graph
// input per host tensor of `inputs` (in order) and returns the outputs, computed on the CPU
// backend. With `cpu_kernels` the graph is built for the project's CPU kernels
// (runtime/cpu_kernels.h: f32 convolutions) where they are available; `f16`: matrices and
// kernels stored as F16.
using MultiBuilder = std::function<std::vector<ggml_tensor*>(
    ggml_context* ctx, ggdiff::nn::Weights* w, const std::vector<ggml_tensor*>& inputs)>;

inline Result<std::vector<HostTensor>> run_graph_multi(
    const std::map<std::string, HostWeight>& weights, const std::vector<const HostTensor*>& inputs,
    const MultiBuilder& build, bool cpu_kernels, bool f16 = false) {
    ggml_backend_t backend = cpu_backend();
    if (!backend) return Status::Error("no CPU backend");
    constexpr size_t kGraphSize = 32768;  // as the pipeline's graph runner
    ggml_init_params p = {
        ggml_tensor_overhead() * kGraphSize * 2 + ggml_graph_overhead_custom(kGraphSize, false),
        nullptr, true};
    ggml_context* ctx = ggml_init(p);
    HostWeights w(weights, f16);
    std::vector<ggml_tensor*> ins;
    for (const HostTensor* t : inputs) {
        int64_t dims[4] = {t->dim(0), t->dim(1), t->dim(2), t->dim(3)};
        ins.push_back(ggml_new_tensor(ctx, GGML_TYPE_F32, 4, dims));
        ggml_set_input(ins.back());
    }
    std::vector<ggml_tensor*> outs;
    {
        std::unique_ptr<ggdiff::cpu::KernelScope> scope;
        if (cpu_kernels && ggdiff::cpu::kernels_available()) {
            scope = std::make_unique<ggdiff::cpu::KernelScope>(ctx);
        }
        outs = build(ctx, &w, ins);
    }
    ggml_cgraph* gf = ggml_new_graph_custom(ctx, kGraphSize, false);
    for (ggml_tensor* o : outs) {
        ggml_set_output(o);
        ggml_build_forward_expand(gf, o);
    }
    Status st = w.upload(backend);
    ggml_gallocr_t galloc = nullptr;
    std::vector<HostTensor> result;
    if (st.ok()) {
        galloc = ggml_gallocr_new(ggml_backend_get_default_buffer_type(backend));
        if (!ggml_gallocr_alloc_graph(galloc, gf)) st = Status::Error("graph allocation failed");
    }
    if (st.ok()) {
        for (size_t i = 0; i < ins.size(); ++i) {
            ggml_backend_tensor_set(ins[i], inputs[i]->ptr(), 0,
                                    inputs[i]->data.size() * sizeof(float));
        }
        if (ggml_backend_graph_compute(backend, gf) != GGML_STATUS_SUCCESS) {
            st = Status::Error("compute failed");
        }
    }
    if (st.ok()) {
        for (ggml_tensor* o : outs) {
            HostTensor r({o->ne[0], o->ne[1], o->ne[2], o->ne[3]});
            ggml_backend_tensor_get(o, r.ptr(), 0, r.data.size() * sizeof(float));
            result.push_back(std::move(r));
        }
    }
    if (galloc) ggml_gallocr_free(galloc);
    ggml_free(ctx);
    if (!st.ok()) return st;
    return result;
}

// --- files for the Python reference -------------------------------------------------

inline void write_npy(const std::filesystem::path& path, const std::vector<int64_t>& shape,
                      const float* data, size_t count) {
    std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
    for (int64_t d : shape) dict += std::to_string(d) + ", ";
    dict += "), }";
    size_t total = 10 + dict.size() + 1;
    dict.append((64 - total % 64) % 64, ' ');
    dict += '\n';
    std::ofstream f(path, std::ios::binary);
    f.write("\x93NUMPY\x01\x00", 8);
    const uint16_t len = static_cast<uint16_t>(dict.size());
    const char le[2] = {static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
    f.write(le, 2);
    f.write(dict.data(), static_cast<std::streamsize>(dict.size()));
    f.write(reinterpret_cast<const char*>(data),
            static_cast<std::streamsize>(count * sizeof(float)));
}

// ggml [W, H, C, N] host tensor as torch [N, C, H, W] (the same bytes).
inline void write_npy(const std::filesystem::path& path, const HostTensor& t) {
    std::vector<int64_t> torch_shape = {t.dim(3), t.dim(2), t.dim(1), t.dim(0)};
    write_npy(path, torch_shape, t.ptr(), t.data.size());
}

// The first of python3 / /usr/bin/python3 that can import numpy ("" if none).
inline const std::string& python_with_numpy() {
    static const std::string found = [] {
        for (const char* py : {"python3", "/usr/bin/python3"}) {
            const std::string cmd = std::string(py) + " -c 'import numpy' >/dev/null 2>&1";
            if (std::system(cmd.c_str()) == 0) return std::string(py);
        }
        return std::string();
    }();
    return found;
}

inline bool python_numpy_available() {
    return !python_with_numpy().empty();
}

// Writes weights, input and a JSON config into `dir`, runs tests/tools/vae_reference.py
// and reads back its float32 output (expected element count `count`).
// (run_reference_script: another script of tests/tools taking the same folder.)
inline Result<std::vector<float>> run_reference_script(
    const std::filesystem::path& dir, const std::map<std::string, HostWeight>& weights,
    const HostTensor& input, const std::string& config_json, size_t count,
    const std::string& script) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir / "weights");
    for (const auto& [name, w] : weights) {
        write_npy(dir / "weights" / (name + ".npy"), w.shape, w.data.data(), w.data.size());
    }
    write_npy(dir / "input.npy", input);
    std::ofstream(dir / "config.json") << config_json;
    const std::string cmd = python_with_numpy() + " '" + GGDIFF_SOURCE_DIR + "/tests/tools/" +
                            script + "' '" + dir.string() + "'";
    if (std::system(cmd.c_str()) != 0) return Status::Error("reference failed: " + cmd);
    std::ifstream f(dir / "output.bin", std::ios::binary);
    std::vector<float> out(count);
    f.read(reinterpret_cast<char*>(out.data()),
           static_cast<std::streamsize>(count * sizeof(float)));
    if (static_cast<size_t>(f.gcount()) != count * sizeof(float) || f.peek() != EOF) {
        return Status::Error("reference output has the wrong size");
    }
    return out;
}

inline Result<std::vector<float>> run_reference(const std::filesystem::path& dir,
                                                const std::map<std::string, HostWeight>& weights,
                                                const HostTensor& input,
                                                const std::string& config_json, size_t count) {
    return run_reference_script(dir, weights, input, config_json, count, "vae_reference.py");
}

struct Diff {
    double max_abs = 0, max_ref = 0;
    size_t non_finite = 0;
    // Largest error relative to the largest reference magnitude (NaN/Inf count as 1e30).
    double rel() const {
        if (non_finite) return 1e30;
        return max_ref > 0 ? max_abs / max_ref : max_abs;
    }
};

// Compares element-wise and prints the figures (they go into the test log).
inline Diff compare(const std::vector<float>& got, const std::vector<float>& ref) {
    Diff d;
    if (got.size() != ref.size()) d.non_finite = 1;
    for (size_t i = 0; i < got.size() && i < ref.size(); ++i) {
        if (!std::isfinite(got[i]) || !std::isfinite(ref[i])) ++d.non_finite;
        d.max_abs = std::max(d.max_abs, static_cast<double>(std::fabs(got[i] - ref[i])));
        d.max_ref = std::max(d.max_ref, static_cast<double>(std::fabs(ref[i])));
    }
    std::printf("[   diff   ] max abs %.3g of %.3g (rel %.3g)\n", d.max_abs, d.max_ref, d.rel());
    return d;
}

}  // namespace vae_test
