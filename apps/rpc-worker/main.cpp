// ggdiff-rpc: serves this machine's ggml devices to other ggdiff processes over
// ggml's RPC protocol (`ggdiff --rpc-servers host:port`).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>
#include <vector>

#include "devices/devices.h"

int main(int argc, char** argv) {
    CLI::App app{"ggdiff-rpc: serve local ggml devices over the ggml RPC protocol"};
    std::string host = "127.0.0.1";
    int port = 50052;
    int threads = ggdiff::default_threads();
    std::vector<std::string> devices;
    std::string cache_dir;
    app.add_option("--host", host,
                   "address to bind (loopback by default; anything else is exposed "
                   "to the network without authentication)")
        ->capture_default_str();
    app.add_option("-p,--port", port, "TCP port")
        ->capture_default_str()
        ->check(CLI::Range(1, 65535));
    app.add_option("-t,--threads", threads, "CPU threads for the served CPU device")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    app.add_option("-d,--device", devices, "device to serve (repeatable; default: the CPU device)");
    app.add_option("--cache-dir", cache_dir, "directory for the RPC tensor cache (optional)");
    CLI11_PARSE(app, argc, argv);

    ggdiff::load_backends();
    std::vector<ggml_backend_dev_t> devs;
    for (const std::string& name : devices) {
        ggml_backend_dev_t d = ggdiff::find_device(name);
        if (!d) {
            std::fprintf(stderr, "error: unknown device \"%s\" (see ggdiff --list-devices)\n",
                         name.c_str());
            return 1;
        }
        devs.push_back(d);
    }
    if (devs.empty()) {
        ggml_backend_dev_t cpu = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
        if (!cpu) {
            std::fprintf(stderr, "error: no CPU device available\n");
            return 1;
        }
        devs.push_back(cpu);
    }
    ggml_backend_reg_t reg = ggml_backend_reg_by_name("RPC");
    if (!reg) {
        std::fprintf(stderr,
                     "error: the ggml RPC backend is not installed (libggml0-backend-rpc)\n");
        return 1;
    }
    using start_fn_t = void (*)(const char*, const char*, size_t, size_t, ggml_backend_dev_t*);
    auto start = reinterpret_cast<start_fn_t>(
        ggml_backend_reg_get_proc_address(reg, "ggml_backend_rpc_start_server"));
    if (!start) {
        std::fprintf(stderr, "error: this ggml build cannot start an RPC server\n");
        return 1;
    }
    if (host != "127.0.0.1" && host != "localhost" && host != "::1") {
        std::fprintf(stderr,
                     "\n!!! WARNING: binding to %s exposes these devices to the network.\n"
                     "!!! The RPC protocol has no authentication or encryption: anyone who can\n"
                     "!!! reach this port can run code on them. Use only on a trusted network.\n\n",
                     host.c_str());
    }
    const std::string endpoint = host + ":" + std::to_string(port);
    std::fprintf(stderr, "ggdiff-rpc: serving");
    for (ggml_backend_dev_t d : devs) std::fprintf(stderr, " %s", ggml_backend_dev_name(d));
    std::fprintf(stderr, " on %s (%d threads)\n", endpoint.c_str(), threads);
    start(endpoint.c_str(), cache_dir.empty() ? nullptr : cache_dir.c_str(),
          static_cast<size_t>(threads), devs.size(), devs.data());
    return 0;
}
