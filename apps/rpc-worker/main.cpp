// ggdiff-rpc: serves this machine's ggml devices to other ggdiff processes over
// ggml's RPC protocol (`ggdiff --rpc-servers host:port`).
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "ggdiff.h"
#include "huge_pages_exec.h"
#include "mem_limit_proxy.h"

namespace {

// SIGTERM / SIGINT / SIGHUP stop the worker at once: ggml's server loop has no stop
// call, and everything it holds (sockets, device memory) goes away with the process.
void on_stop_signal(int sig) {
    const char* msg = sig == SIGINT   ? "ggdiff-rpc: stopping (SIGINT)\n"
                      : sig == SIGHUP ? "ggdiff-rpc: stopping (SIGHUP)\n"
                                      : "ggdiff-rpc: stopping (SIGTERM)\n";
    ssize_t n = write(STDERR_FILENO, msg, std::strlen(msg));
    (void)n;
    _exit(0);
}

void install_signal_handlers() {
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGHUP, &sa, nullptr);
    // A client that disconnects mid-reply must not kill the server (ggml's send() would
    // raise SIGPIPE); the failed send just ends that client's session.
    signal(SIGPIPE, SIG_IGN);
}

// Resolves the bind host to a numeric IPv4 address (ggml's server takes only those).
bool resolve_host(const std::string& host, std::string* ip, std::string* error) {
    if (host.find(':') != std::string::npos || host.find('[') != std::string::npos) {
        *error = "IPv6 addresses are not supported by ggml RPC; use an IPv4 address or a host name";
        return false;
    }
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res);
    if (rc != 0 || !res) {
        if (res) freeaddrinfo(res);
        *error = std::string("cannot resolve host (") +
                 (rc ? gai_strerror(rc) : "no IPv4 address") + ")";
        return false;
    }
    char buf[INET_ADDRSTRLEN] = {0};
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr, buf, sizeof(buf));
    freeaddrinfo(res);
    *ip = buf;
    return true;
}

// Binds host:port once (then releases it) so a busy port or a foreign address is a clear
// error here; ggml's server only says "Failed to create server socket".
bool check_bindable(const std::string& ip, int port, std::string* error) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        *error = std::string("socket: ") + std::strerror(errno);
        return false;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, ip.c_str(), &addr.sin_addr);
    bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    if (ok) ok = listen(fd, 1) == 0;
    if (!ok) *error = std::strerror(errno);
    close(fd);
    return ok;
}

bool is_loopback(const std::string& ip) {
    return ip.rfind("127.", 0) == 0;
}

// A loopback port nothing listens on now (the kernel's pick for port 0), or -1.
int free_loopback_port() {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    int port = -1;
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
        port = ntohs(addr.sin_port);
    }
    close(fd);
    return port;
}

struct Serving {
    std::string endpoint;
    int threads;
    int64_t mem_mib;  // 0: no --mem
};

void log_serving(const char* served, const Serving& s) {
    if (s.mem_mib > 0) {
        std::fprintf(stderr,
                     "ggdiff-rpc: serving %s on %s (%d threads, %lld MiB per device: --mem)\n",
                     served, s.endpoint.c_str(), s.threads, static_cast<long long>(s.mem_mib));
    } else {
        std::fprintf(stderr, "ggdiff-rpc: serving %s on %s (%d threads)\n", served,
                     s.endpoint.c_str(), s.threads);
    }
}

[[noreturn]] void exit_now(int code) {
    std::fflush(nullptr);
    _exit(code);  // ggml's server thread has no stop call: end the process around it
}

// --mem: ggml's RPC server runs on a free loopback port, and a MemLimitProxy in front of it
// serves the user's endpoint, advertising and enforcing the limit (mem_limit_proxy.h).
int serve_with_mem_limit(const std::string& ip, int port, const std::vector<std::string>& devices,
                         const std::string& cache_dir, const Serving& serving) {
    const int inner_port = free_loopback_port();
    if (inner_port <= 0) {
        std::fprintf(stderr, "error: --mem: no free loopback port for ggml's RPC server\n");
        return 1;
    }
    const std::string inner = "127.0.0.1:" + std::to_string(inner_port);
    std::promise<std::string> served;
    std::future<std::string> served_names = served.get_future();
    std::thread([&served, inner, devices, cache_dir, threads = serving.threads] {
        std::vector<const char*> names;
        for (const std::string& d : devices) names.push_back(d.c_str());
        ggdiff_rpc_serve(
            inner.c_str(), names.data(), static_cast<int>(names.size()), threads, cache_dir.c_str(),
            [](const char* names, void* user) {
                static_cast<std::promise<std::string>*>(user)->set_value(names);
            },
            &served);
        std::fprintf(stderr, "error: %s\n", ggdiff_last_error());
        exit_now(1);
    }).detach();

    std::string error;
    if (!ggdiff_rpc::check_rpc_server(inner_port, 60000, &error)) {
        std::fprintf(stderr, "error: --mem: %s\n", error.c_str());
        exit_now(1);
    }
    ggdiff_rpc::MemLimitProxy proxy(
        static_cast<uint64_t>(serving.mem_mib) << 20, inner_port,
        [](const std::string& line) { std::fprintf(stderr, "ggdiff-rpc: %s\n", line.c_str()); });
    if (!proxy.listen(ip, port, &error)) {
        std::fprintf(stderr, "error: cannot listen on %s: %s\n", serving.endpoint.c_str(),
                     error.c_str());
        exit_now(1);
    }
    log_serving(served_names.get().c_str(), serving);
    std::fprintf(stderr,
                 "ggdiff-rpc: --mem: clients see %lld MiB free and total per device, and buffers "
                 "past it are refused; ggml's own server runs behind this one on %s\n",
                 static_cast<long long>(serving.mem_mib), inner.c_str());
    proxy.serve();  // until a signal ends the process
    exit_now(0);
}

}  // namespace

int main(int argc, char** argv) {
    ggdiff::app::restart_with_huge_pages(argv);
    CLI::App app{"ggdiff-rpc: serve local ggml devices over the ggml RPC protocol"};
    std::string host = "127.0.0.1";
    int port = 50052;
    int threads = ggdiff_default_threads();
    std::vector<std::string> devices;
    std::string cache_dir;
    app.add_option("--host", host,
                   "address to bind (loopback by default; anything else is exposed "
                   "to the network without authentication)")
        ->capture_default_str();
    app.add_option("-p,--port", port, "TCP port (1-65535)")
        ->capture_default_str()
        ->check(CLI::TypeValidator<int>("whole number"))
        ->check(CLI::Range(1, 65535));
    app.add_option("-t,--threads", threads, "CPU threads for the served CPU device")
        ->capture_default_str()
        ->check(CLI::TypeValidator<int>("whole number"))
        ->check(CLI::Range(1, 4096));
    app.add_option("-d,--device", devices,
                   "device to serve, as named by `ggdiff --list-devices` (repeatable; "
                   "default: the CPU device)");
    app.add_option("--cache-dir", cache_dir, "directory for the RPC tensor cache (optional)");
    int64_t mem_mib = 0;
    app.add_option("--mem", mem_mib,
                   "advertise and enforce this much memory (MiB) on each served device: "
                   "clients are told free = total = MiB, and a buffer that would take the "
                   "device's live buffers past it is refused like a failed allocation "
                   "(default: the devices' own memory)")
        ->check(CLI::TypeValidator<int64_t>("whole number"))
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
    CLI11_PARSE(app, argc, argv);

    install_signal_handlers();

    std::string ip, error;
    if (!resolve_host(host, &ip, &error)) {
        std::fprintf(stderr, "error: --host %s: %s\n", host.c_str(), error.c_str());
        return 1;
    }

    const std::string endpoint = ip + ":" + std::to_string(port);
    if (!check_bindable(ip, port, &error)) {
        const std::string given = host == ip ? "" : " (--host " + host + ")";
        std::fprintf(stderr, "error: cannot listen on %s%s: %s\n", endpoint.c_str(), given.c_str(),
                     error.c_str());
        return 1;
    }
    if (!is_loopback(ip)) {
        std::fprintf(stderr,
                     "\n"
                     "!!! WARNING: ggdiff-rpc is bound to %s, not loopback: these devices are\n"
                     "!!! exposed to the network. The RPC protocol has no authentication or\n"
                     "!!! encryption: anyone who can reach this port can read and write their\n"
                     "!!! memory and run graphs on them. Use only on a trusted network.\n"
                     "\n",
                     endpoint.c_str());
    }
    Serving serving{endpoint, threads, mem_mib};
    if (mem_mib > 0) return serve_with_mem_limit(ip, port, devices, cache_dir, serving);
    std::vector<const char*> names;
    for (const std::string& d : devices) names.push_back(d.c_str());
    ggdiff_rpc_serve(
        endpoint.c_str(), names.data(), static_cast<int>(names.size()), threads, cache_dir.c_str(),
        [](const char* served, void* user) {
            log_serving(served, *static_cast<const Serving*>(user));
        },
        &serving);
    std::fflush(stdout);
    std::fprintf(stderr, "error: %s\n", ggdiff_last_error());
    return 1;
}
