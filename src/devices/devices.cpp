#include "devices/devices.h"

#include <arpa/inet.h>
#include <ggml.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
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

// ggml's own handling of a failed assertion prints the message and then forks a debugger for
// a backtrace; where ptrace is not allowed (containers, CI) that debugger can hang and the
// process never exits. The message alone is printed and ggml then aborts.
void print_ggml_abort(const char* message) {
    std::fprintf(stderr, "%s\n", message ? message : "ggml abort");
    std::fflush(stderr);
}

}  // namespace

void load_backends() {
    static std::once_flag once;
    std::call_once(once, [] {
        ggml_backend_load_all();
        if (!std::getenv("GGDIFF_GGML_BACKTRACE")) ggml_set_abort_callback(print_ggml_abort);
    });
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

namespace {

bool is_host_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_';
}

// ggml aborts the process when an RPC endpoint fails its handshake. While a handshake runs
// on a thread marked here, the abort callback throws instead, so the failure becomes an
// error that names the endpoint.
thread_local bool t_throw_on_ggml_abort = false;
ggml_abort_callback_t g_prev_abort_callback = nullptr;
std::atomic<int> g_stuck_handshakes{0};
std::mutex g_rpc_mutex;                          // serializes add_rpc_servers
std::map<std::string, std::string> g_rpc_added;  // resolved "ip:port" -> endpoint text

struct GgmlAbort : std::runtime_error {
    using std::runtime_error::runtime_error;
};

void rpc_abort_callback(const char* message) {
    if (t_throw_on_ggml_abort) throw GgmlAbort(message ? message : "ggml abort");
    if (g_prev_abort_callback) {
        g_prev_abort_callback(message);
    } else {
        std::fprintf(stderr, "%s\n", message ? message : "ggml abort");
    }
}

// "./src/ggml-rpc/ggml-rpc.cpp:650: Failed to connect to x\n" -> "Failed to connect to x".
std::string clean_ggml_message(std::string m) {
    const size_t p = m.find(": ");
    if (p != std::string::npos) {
        const size_t c = m.rfind(':', p - 1);
        if (c != std::string::npos && c + 1 < p && m.find_first_not_of("0123456789", c + 1) == p) {
            m = m.substr(p + 2);  // drops the "file:line: " prefix
        }
    }
    while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
    return m;
}

Result<sockaddr_in> resolve_ipv4(const RpcEndpoint& ep) {
    addrinfo hints{};
    hints.ai_family = AF_INET;  // ggml's RPC client is IPv4 only
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    int rc = getaddrinfo(ep.host.c_str(), nullptr, &hints, &res);
    if (rc != 0 || !res) {
        if (res) freeaddrinfo(res);
        return Status::Error("--rpc-servers: " + ep.text() + ": cannot resolve host \"" + ep.host +
                             "\" (" + (rc != 0 ? gai_strerror(rc) : "no IPv4 address") + ")");
    }
    sockaddr_in addr{};
    std::memcpy(&addr, res->ai_addr, sizeof(addr));
    freeaddrinfo(res);
    addr.sin_port = htons(static_cast<uint16_t>(ep.port));
    return addr;
}

std::string addr_key(const sockaddr_in& a) {
    char ip[INET_ADDRSTRLEN] = {0};
    inet_ntop(AF_INET, &a.sin_addr, ip, sizeof(ip));
    return std::string(ip) + ":" + std::to_string(ntohs(a.sin_port));
}

// A TCP connect bounded by timeout_ms; empty on success, else the reason.
std::string tcp_probe(const sockaddr_in& addr, int timeout_ms) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return std::string("socket: ") + std::strerror(errno);
    std::string err;
    if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
        if (errno != EINPROGRESS) {
            err = std::strerror(errno);
        } else {
            auto deadline =
                std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
            for (;;) {
                auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                                deadline - std::chrono::steady_clock::now())
                                .count();
                if (left <= 0) {
                    err = "no answer within " + std::to_string(timeout_ms) + " ms";
                    break;
                }
                pollfd p{fd, POLLOUT, 0};
                int n = poll(&p, 1, static_cast<int>(left));
                if (n < 0 && errno == EINTR) continue;
                if (n < 0) {
                    err = std::string("poll: ") + std::strerror(errno);
                    break;
                }
                if (n == 0) continue;  // re-checks the deadline
                int soerr = 0;
                socklen_t len = sizeof(soerr);
                if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0) soerr = errno;
                if (soerr != 0) err = std::strerror(soerr);
                break;
            }
        }
    }
    close(fd);
    return err;
}

struct Handshake {
    std::mutex m;
    std::condition_variable cv;
    bool done = false;
    bool abandoned = false;
    ggml_backend_reg_t reg = nullptr;
    std::string error;
};

using add_server_t = ggml_backend_reg_t (*)(const char*);

// ggml_backend_rpc_add_server (connect, hello, device count) on its own thread, bounded
// by timeout_ms. On a timeout the thread is left blocked in ggml (it holds ggml's RPC
// registry lock) and later calls are refused until it ends.
Result<ggml_backend_reg_t> guarded_add(add_server_t add, const std::string& ep, int timeout_ms) {
    auto hs = std::make_shared<Handshake>();
    std::thread worker([hs, add, ep] {
        t_throw_on_ggml_abort = true;
        // A peer that closes early must give EPIPE here, not kill the process with
        // SIGPIPE; threads ggml starts from here (the connection's dispatcher) inherit it.
        sigset_t pipe_set;
        sigemptyset(&pipe_set);
        sigaddset(&pipe_set, SIGPIPE);
        pthread_sigmask(SIG_BLOCK, &pipe_set, nullptr);
        ggml_backend_reg_t reg = nullptr;
        std::string error;
        try {
            reg = add(ep.c_str());
        } catch (const std::exception& e) {
            error = clean_ggml_message(e.what());
            if (error.empty()) error = "handshake failed";
        } catch (...) {
            error = "handshake failed";
        }
        std::lock_guard<std::mutex> lock(hs->m);
        hs->reg = reg;
        hs->error = error;
        hs->done = true;
        if (hs->abandoned) g_stuck_handshakes.fetch_sub(1);
        hs->cv.notify_all();
    });
    std::unique_lock<std::mutex> lock(hs->m);
    if (!hs->cv.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return hs->done; })) {
        hs->abandoned = true;
        g_stuck_handshakes.fetch_add(1);
        lock.unlock();
        worker.detach();
        return Status::Error(
            "--rpc-servers: RPC server " + ep +
            " accepted the connection but did not answer within " +
            std::to_string(timeout_ms / 1000) +
            " s (is it a ggml RPC server? a worker serves one client at a time: is another "
            "process using it?)");
    }
    lock.unlock();
    worker.join();
    if (!hs->error.empty()) {
        return Status::Error("--rpc-servers: RPC server " + ep + " failed the handshake (" +
                             hs->error +
                             "); is it a ggdiff-rpc worker built on the same ggml version?");
    }
    if (!hs->reg || ggml_backend_reg_dev_count(hs->reg) == 0) {
        return Status::Error("--rpc-servers: RPC server " + ep + " serves no devices");
    }
    return hs->reg;
}

bool reg_is_registered(ggml_backend_reg_t reg) {
    for (size_t i = 0; i < ggml_backend_reg_count(); ++i) {
        if (ggml_backend_reg_get(i) == reg) return true;
    }
    return false;
}

}  // namespace

int pending_rpc_handshakes() {
    return g_stuck_handshakes.load();
}

Result<RpcEndpoint> parse_rpc_endpoint(const std::string& raw) {
    const std::string ep = trim(raw);
    const std::string q = "--rpc-servers: \"" + ep + "\"";
    if (ep.empty()) return Status::Error("--rpc-servers: empty endpoint (expected host:port)");
    if (ep.find_first_of(" \t\r\n") != std::string::npos) {
        return Status::Error(q + " contains a space (expected host:port)");
    }
    if (ep.front() == '[' || std::count(ep.begin(), ep.end(), ':') > 1) {
        return Status::Error(q +
                             ": IPv6 addresses are not supported by ggml RPC; use an IPv4 "
                             "address or a host name");
    }
    const size_t colon = ep.find(':');
    if (colon == std::string::npos) return Status::Error(q + " is not host:port (no port)");
    RpcEndpoint out;
    out.host = ep.substr(0, colon);
    const std::string port = ep.substr(colon + 1);
    if (out.host.empty()) return Status::Error(q + " is not host:port (no host)");
    if (!std::all_of(out.host.begin(), out.host.end(), is_host_char)) {
        return Status::Error(q + ": invalid host \"" + out.host + "\"");
    }
    if (port.empty()) return Status::Error(q + " is not host:port (no port)");
    if (port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
        std::stoi(port) < 1 || std::stoi(port) > 65535) {
        return Status::Error(q + ": port \"" + port + "\" is not a number in 1-65535");
    }
    out.port = std::stoi(port);
    return out;
}

Result<std::vector<RpcEndpoint>> parse_rpc_servers(const std::string& csv) {
    std::vector<RpcEndpoint> out;
    if (trim(csv).empty()) return out;
    std::vector<std::string> parts;
    size_t begin = 0;
    for (;;) {
        size_t comma = csv.find(',', begin);
        parts.push_back(
            csv.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin));
        if (comma == std::string::npos) break;
        begin = comma + 1;
    }
    for (const std::string& part : parts) {
        if (trim(part).empty()) {
            return Status::Error("--rpc-servers: empty entry in \"" + csv +
                                 "\" (expected host:port,...)");
        }
        Result<RpcEndpoint> ep = parse_rpc_endpoint(part);
        if (!ep.ok()) return ep.status();
        bool seen = false;
        for (const RpcEndpoint& e : out) seen = seen || e.text() == ep->text();
        if (!seen) out.push_back(*ep);
    }
    return out;
}

Status add_rpc_servers(const std::string& csv, std::vector<std::string>* added,
                       const RpcConnectOptions& options) {
    Result<std::vector<RpcEndpoint>> eps = parse_rpc_servers(csv);
    if (!eps.ok()) return eps.status();
    if (eps->empty()) return Status::Ok();
    load_backends();
    std::lock_guard<std::mutex> lock(g_rpc_mutex);

    // Resolve and probe every new endpoint before any of them reaches ggml.
    std::vector<std::pair<RpcEndpoint, std::string>> todo;  // endpoint, resolved key
    for (const RpcEndpoint& ep : *eps) {
        bool known = false;
        for (const auto& kv : g_rpc_added) known = known || kv.second == ep.text();
        if (known) continue;
        Result<sockaddr_in> addr = resolve_ipv4(ep);
        if (!addr.ok()) return addr.status();
        const std::string key = addr_key(*addr);
        auto it = g_rpc_added.find(key);
        std::string other = it != g_rpc_added.end() ? it->second : std::string();
        for (const auto& t : todo) {
            if (t.second == key) other = t.first.text();
        }
        if (!other.empty()) {
            return Status::Error("--rpc-servers: " + ep.text() + " and " + other +
                                 " are the same RPC server (" + key + "); list each server once");
        }
        std::string err = tcp_probe(*addr, options.connect_timeout_ms);
        if (!err.empty()) {
            return Status::Error("--rpc-servers: cannot reach RPC server " + ep.text() + " (" +
                                 err + "); is ggdiff-rpc running there?");
        }
        todo.emplace_back(ep, key);
    }
    if (todo.empty()) return Status::Ok();

    ggml_backend_reg_t rpc = ggml_backend_reg_by_name("RPC");
    if (!rpc) {
        return Status::Error(
            "--rpc-servers: the ggml RPC backend is not available (install libggml0-backend-rpc)");
    }
    auto add = reinterpret_cast<add_server_t>(
        ggml_backend_reg_get_proc_address(rpc, "ggml_backend_rpc_add_server"));
    if (!add) return Status::Error("--rpc-servers: this ggml build cannot add RPC servers");
    if (g_stuck_handshakes.load() > 0) {
        return Status::Error(
            "--rpc-servers: an earlier RPC handshake has not finished; cannot add servers now");
    }

    g_prev_abort_callback = ggml_set_abort_callback(rpc_abort_callback);
    if (g_prev_abort_callback == rpc_abort_callback) g_prev_abort_callback = nullptr;
    Status status = Status::Ok();
    for (const auto& t : todo) {
        Result<ggml_backend_reg_t> reg =
            guarded_add(add, t.first.text(), options.handshake_timeout_ms);
        if (!reg.ok()) {
            status = reg.status();
            break;
        }
        if (!reg_is_registered(*reg)) ggml_backend_register(*reg);
        g_rpc_added[t.second] = t.first.text();
        for (size_t i = 0; i < ggml_backend_reg_dev_count(*reg); ++i) {
            const char* name = ggml_backend_dev_name(ggml_backend_reg_dev_get(*reg, i));
            GGDIFF_LOG_DEBUG("RPC server %s: device %s", t.first.text().c_str(), name);
            if (added) added->push_back(name);
        }
    }
    // A handshake left running may still end in a ggml abort; keep the callback for it.
    if (g_stuck_handshakes.load() == 0) ggml_set_abort_callback(g_prev_abort_callback);
    return status;
}

void set_backend_threads(ggml_backend_t backend, int n_threads) {
    ggml_backend_dev_t dev = ggml_backend_get_device(backend);
    if (!dev || n_threads <= 0) return;
    auto fn = reinterpret_cast<ggml_backend_set_n_threads_t>(
        device_proc(dev, "ggml_backend_set_n_threads"));
    if (fn) fn(backend, n_threads);
}

placement::DeviceInfo placement_info(const DeviceInfo& d) {
    placement::DeviceInfo p;
    p.name = d.name;
    switch (d.type) {
        case GGML_BACKEND_DEVICE_TYPE_CPU:
            p.type = placement::DeviceType::Cpu;
            break;
        case GGML_BACKEND_DEVICE_TYPE_IGPU:
            p.type = placement::DeviceType::IGpu;
            break;
        case GGML_BACKEND_DEVICE_TYPE_ACCEL:
            p.type = placement::DeviceType::Accel;
            break;
        default:
            p.type = placement::DeviceType::Gpu;
    }
    p.free_bytes = d.free;
    p.total_bytes = d.total;
    ggml_backend_reg_t reg = d.dev ? ggml_backend_dev_backend_reg(d.dev) : nullptr;
    p.registry = reg ? ggml_backend_reg_name(reg) : "";
    p.has_split_buffer = d.dev && device_proc(d.dev, "ggml_backend_split_buffer_type") != nullptr;
    return p;
}

int default_threads() {
    // GGDIFF_THREADS sets the default for every process that does not pass -t (the test runner
    // uses it to run one thread per process when it runs as many processes as there are cores:
    // ggml's CPU threads wait by spinning, so oversubscribed cores lose a quarter of their time).
    if (const char* env = std::getenv("GGDIFF_THREADS"); env && *env) {
        char* end = nullptr;
        const long v = std::strtol(env, &end, 10);
        if (end && *end == '\0' && v > 0 && v <= 4096) return static_cast<int>(v);
        static bool warned = false;
        if (!warned) {
            warned = true;
            GGDIFF_LOG_WARN("GGDIFF_THREADS='%s' is not a thread count (1..4096); ignored", env);
        }
    }
    unsigned n = std::thread::hardware_concurrency();
    return n == 0 ? 4 : static_cast<int>(n);
}

}  // namespace ggdiff
