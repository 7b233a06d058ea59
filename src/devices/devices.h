// ggml devices: dynamic backend loading, listing, lookup by name, RPC servers and
// memory queries. Device names are those ggml reports ("CPU", "BLAS", "RPC0", ...).
#pragma once

#include <ggml-backend.h>

#include <cstddef>
#include <string>
#include <vector>

#include "core/status.h"

namespace ggdiff {

struct DeviceInfo {
    std::string name;
    std::string description;
    ggml_backend_dev_t dev = nullptr;
    enum ggml_backend_dev_type type = GGML_BACKEND_DEVICE_TYPE_CPU;
    size_t free = 0;
    size_t total = 0;
    bool is_gpu_like() const {
        return type == GGML_BACKEND_DEVICE_TYPE_GPU || type == GGML_BACKEND_DEVICE_TYPE_IGPU;
    }
    bool is_rpc() const { return name.rfind("RPC", 0) == 0; }
};

// Loads every available ggml backend once (ggml_backend_load_all); thread-safe.
void load_backends();

// All devices (after load_backends), in ggml's registry order.
std::vector<DeviceInfo> list_devices();
std::vector<std::string> device_names();

// Finds a device by name, case-insensitively. nullptr if none.
ggml_backend_dev_t find_device(const std::string& name);

// Adds remote RPC servers ("host:port,host:port") as devices. Each endpoint is
// checked to be reachable; the error names the endpoint that failed.
Status add_rpc_servers(const std::string& csv);

// Looks up a backend-specific function by name on a device's registry.
void* device_proc(ggml_backend_dev_t dev, const char* name);

// Sets the thread count on a backend that supports it (CPU, BLAS); no-op otherwise.
void set_backend_threads(ggml_backend_t backend, int n_threads);

// Physical-ish default thread count (hardware threads).
int default_threads();

}  // namespace ggdiff
