// ggml devices: dynamic backend loading, listing, lookup by name, RPC servers and
// memory queries. Device names are those ggml reports ("CPU", "BLAS", "RPC0", ...);
// ggml 0.27 itself names RPC devices RPC<n> (description: the endpoint).
#pragma once

#include <ggml-backend.h>

#include <cstddef>
#include <string>
#include <vector>

#include "core/status.h"
#include "placement/device_info.h"

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

// One `host:port` of --rpc-servers. ggml's RPC client speaks IPv4 only (it splits the
// endpoint at the first ':'), so the host is an IPv4 address or a host name.
struct RpcEndpoint {
    std::string host;
    int port = 0;
    std::string text() const { return host + ":" + std::to_string(port); }
};

// Checks one endpoint's syntax without touching the network; the error names it.
Result<RpcEndpoint> parse_rpc_endpoint(const std::string& text);
// Splits a comma-separated list (spaces around entries are ignored) and checks every
// entry; an empty list is fine, an empty entry is an error. Repeats are dropped.
Result<std::vector<RpcEndpoint>> parse_rpc_servers(const std::string& csv);

struct RpcConnectOptions {
    int connect_timeout_ms = 3000;     // TCP reachability probe per endpoint
    int handshake_timeout_ms = 30000;  // RPC hello + device count (a busy server waits)
};

// Adds remote RPC servers ("host:port,host:port") as devices. ggml names them RPC0,
// RPC1, ... in the order they are added in this process (a worker serving several
// devices gives consecutive numbers), so one --rpc-servers list gives RPC<i> for its
// i-th server. Every endpoint is validated, then probed with a bounded TCP connect and a
// bounded handshake before ggml sees it (ggml aborts the process on a dead endpoint);
// the error names the endpoint that failed. Endpoints already added are skipped. Two
// entries that resolve to the same server are an error (a ggml RPC server serves one
// client connection at a time, so the second would wait forever). `added` (optional)
// receives the names of the devices this call registered.
Status add_rpc_servers(const std::string& csv, std::vector<std::string>* added = nullptr,
                       const RpcConnectOptions& options = {});

// Handshakes abandoned after handshake_timeout_ms that are still blocked in ggml. While
// one is, add_rpc_servers refuses new servers (ggml's RPC registry lock is held).
int pending_rpc_handshakes();

// Looks up a backend-specific function by name on a device's registry.
void* device_proc(ggml_backend_dev_t dev, const char* name);

// Sets the thread count on a backend that supports it (CPU, BLAS); no-op otherwise.
void set_backend_threads(ggml_backend_t backend, int n_threads);

// What the placement planners know about a device (type, free memory, registry,
// whether its backend offers split buffers).
placement::DeviceInfo placement_info(const DeviceInfo& device);

// Physical-ish default thread count (hardware threads).
int default_threads();

}  // namespace ggdiff
