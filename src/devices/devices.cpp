#include "devices/devices.h"

#include <algorithm>
#include <cctype>
#include <mutex>
#include <sstream>
#include <thread>

#include "core/log.h"

namespace ggdiff {
namespace {

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

std::string trim(const std::string& s) {
    size_t b = s.find_first_not_of(" \t");
    size_t e = s.find_last_not_of(" \t");
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

}  // namespace

void load_backends() {
    static std::once_flag once;
    std::call_once(once, [] { ggml_backend_load_all(); });
}

std::vector<DeviceInfo> list_devices() {
    load_backends();
    std::vector<DeviceInfo> out;
    for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
        ggml_backend_dev_t dev = ggml_backend_dev_get(i);
        DeviceInfo d;
        d.dev = dev;
        d.name = ggml_backend_dev_name(dev);
        d.description = ggml_backend_dev_description(dev);
        d.type = ggml_backend_dev_type(dev);
        ggml_backend_dev_memory(dev, &d.free, &d.total);
        out.push_back(std::move(d));
    }
    return out;
}

std::vector<std::string> device_names() {
    std::vector<std::string> names;
    for (const DeviceInfo& d : list_devices()) names.push_back(d.name);
    return names;
}

ggml_backend_dev_t find_device(const std::string& name) {
    load_backends();
    const std::string want = lower(name);
    for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
        ggml_backend_dev_t dev = ggml_backend_dev_get(i);
        if (lower(ggml_backend_dev_name(dev)) == want) return dev;
    }
    return nullptr;
}

void* device_proc(ggml_backend_dev_t dev, const char* name) {
    ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(dev);
    return reg ? ggml_backend_reg_get_proc_address(reg, name) : nullptr;
}

Status add_rpc_servers(const std::string& csv) {
    load_backends();
    ggml_backend_reg_t reg = ggml_backend_reg_by_name("RPC");
    if (!reg) {
        return Status::Error(
            "--rpc-servers: the ggml RPC backend is not available (install libggml0-backend-rpc)");
    }
    using add_server_t = ggml_backend_reg_t (*)(const char*);
    auto add = reinterpret_cast<add_server_t>(
        ggml_backend_reg_get_proc_address(reg, "ggml_backend_rpc_add_server"));
    if (!add) return Status::Error("--rpc-servers: this ggml build cannot add RPC servers");
    std::stringstream ss(csv);
    std::string ep;
    while (std::getline(ss, ep, ',')) {
        ep = trim(ep);
        if (ep.empty()) continue;
        size_t colon = ep.rfind(':');
        if (colon == std::string::npos || colon == 0 || colon + 1 == ep.size() ||
            ep.find_first_not_of("0123456789", colon + 1) != std::string::npos) {
            return Status::Error("--rpc-servers: \"" + ep + "\" is not host:port");
        }
        ggml_backend_reg_t server = add(ep.c_str());
        if (!server || ggml_backend_reg_dev_count(server) == 0) {
            return Status::Error("--rpc-servers: cannot reach RPC server " + ep);
        }
        ggml_backend_register(server);
    }
    return Status::Ok();
}

void set_backend_threads(ggml_backend_t backend, int n_threads) {
    ggml_backend_dev_t dev = ggml_backend_get_device(backend);
    if (!dev || n_threads <= 0) return;
    auto fn = reinterpret_cast<ggml_backend_set_n_threads_t>(
        device_proc(dev, "ggml_backend_set_n_threads"));
    if (fn) fn(backend, n_threads);
}

int default_threads() {
    unsigned n = std::thread::hardware_concurrency();
    return n == 0 ? 4 : static_cast<int>(n);
}

}  // namespace ggdiff
