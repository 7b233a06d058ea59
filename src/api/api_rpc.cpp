// C API for the helper apps: serving local devices over ggml's RPC protocol (ggdiff-rpc), the
// default thread count, and indexing checkpoint files without loading them (ggdiff-bench).
#include <ggml-backend.h>

#include <cstdint>
#include <string>
#include <vector>

#include "api/c_api_internal.h"
#include "devices/devices.h"
#include "families/registry.h"
#include "ggdiff.h"
#include "io/tensor_index.h"

using ggdiff::api::fail;

extern "C" {

int ggdiff_default_threads(void) {
    return ggdiff::default_threads();
}

int ggdiff_index_files(const char* const* paths, int n_paths, int64_t* out_tensors) {
    if ((!paths && n_paths > 0) || n_paths < 0) return fail("ggdiff_index_files: bad arguments");
    ggdiff::TensorIndex index = ggdiff::model_index();
    for (int i = 0; i < n_paths; ++i) {
        if (!paths[i]) return fail("ggdiff_index_files: null path");
        const ggdiff::Status st = index.add(paths[i]);
        if (!st.ok()) return fail(st);
    }
    if (out_tensors) *out_tensors = static_cast<int64_t>(index.size());
    return 0;
}

int ggdiff_rpc_serve(const char* endpoint, const char* const* devices, int n_devices, int threads,
                     const char* cache_dir, ggdiff_rpc_serving_fn on_serving, void* user) {
    if (!endpoint || !*endpoint) return fail("ggdiff_rpc_serve: no endpoint");
    if ((!devices && n_devices > 0) || n_devices < 0 || threads < 1) {
        return fail("ggdiff_rpc_serve: bad arguments");
    }
    ggdiff::load_backends();
    std::vector<ggml_backend_dev_t> devs;
    for (int i = 0; i < n_devices; ++i) {
        const std::string name = devices[i] ? devices[i] : "";
        ggml_backend_dev_t d = ggdiff::find_device(name);
        if (!d) {
            std::string known;
            for (const std::string& n : ggdiff::device_names()) {
                known += (known.empty() ? "" : ", ") + n;
            }
            return fail("unknown device \"" + name + "\" (devices here: " + known + ")");
        }
        if (ggml_backend_dev_type(d) == GGML_BACKEND_DEVICE_TYPE_ACCEL) {
            return fail(std::string(ggml_backend_dev_name(d)) +
                        " is an accelerator that runs only some ops; serve the CPU or a GPU "
                        "device");
        }
        bool dup = false;
        for (ggml_backend_dev_t x : devs) dup = dup || x == d;
        if (!dup) devs.push_back(d);
    }
    if (devs.empty()) {
        ggml_backend_dev_t cpu = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
        if (!cpu) return fail("no CPU device available");
        devs.push_back(cpu);
    }
    ggml_backend_reg_t reg = ggml_backend_reg_by_name("RPC");
    if (!reg) return fail("the ggml RPC backend is not installed (libggml0-backend-rpc)");
    using start_fn_t = void (*)(const char*, const char*, size_t, size_t, ggml_backend_dev_t*);
    auto start = reinterpret_cast<start_fn_t>(
        ggml_backend_reg_get_proc_address(reg, "ggml_backend_rpc_start_server"));
    if (!start) return fail("this ggml build cannot start an RPC server");
    if (on_serving) {
        std::string names;
        for (ggml_backend_dev_t d : devs)
            names += (names.empty() ? "" : " ") + std::string(ggml_backend_dev_name(d));
        on_serving(names.c_str(), user);
    }
    start(endpoint, cache_dir && *cache_dir ? cache_dir : nullptr, static_cast<size_t>(threads),
          devs.size(), devs.data());
    // ggml's server loop returns only when it cannot listen or accept.
    return fail(std::string("the RPC server on ") + endpoint +
                " stopped (could not listen or accept)");
}

}  // extern "C"
