#include "mem_limit_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

namespace ggdiff_rpc {

namespace {

// ---- protocol 8 (ggml/src/ggml-rpc/ggml-rpc.cpp) ------------------------------------------

// Command numbers: the order of ggml's rpc_cmd enum.
enum Cmd : uint8_t {
    kAllocBuffer = 0,
    kFreeBuffer = 4,
    kGetDeviceMemory = 11,
    kHello = 14,
    kCmdCount = 23,  // 23 (RPC_CMD_NONE) is the client's own marker, never sent
};

// Whether the server answers command c (size + reply); the others get nothing back.
constexpr bool kAnswered[kCmdCount] = {
    true,   //  0 ALLOC_BUFFER
    true,   //  1 GET_ALIGNMENT
    true,   //  2 GET_MAX_SIZE
    true,   //  3 BUFFER_GET_BASE
    false,  //  4 FREE_BUFFER
    false,  //  5 BUFFER_CLEAR
    false,  //  6 SET_TENSOR
    true,   //  7 SET_TENSOR_HASH
    true,   //  8 GET_TENSOR
    true,   //  9 COPY_TENSOR
    false,  // 10 GRAPH_COMPUTE
    true,   // 11 GET_DEVICE_MEMORY
    false,  // 12 INIT_TENSOR
    true,   // 13 GET_ALLOC_SIZE
    true,   // 14 HELLO
    true,   // 15 DEVICE_COUNT
    false,  // 16 GRAPH_RECOMPUTE
    false,  // 17 MEMSET_TENSOR
    false,  // 18 SET_TENSOR_2D
    true,   // 19 GET_TENSOR_2D
    true,   // 20 COMM_INIT
    false,  // 21 COMM_ALLREDUCE
    false,  // 22 COMM_FREE
};

constexpr size_t kConnCaps = 24;               // transport capabilities in HELLO
constexpr size_t kHelloRequest = kConnCaps;    // caps
constexpr size_t kHelloReply = 4 + kConnCaps;  // major, minor, patch, padding, caps
constexpr size_t kAllocRequest = 4 + 8;        // device (u32), size (u64)
constexpr size_t kAllocReply = 8 + 8;          // remote pointer, remote size
constexpr size_t kFreeRequest = 8;             // remote pointer
constexpr size_t kMemoryRequest = 4;           // device
constexpr size_t kMemoryReply = 8 + 8;         // free, total

constexpr size_t kStreamBuffer = 1 << 20;  // bytes moved per read while streaming a payload

double mib(uint64_t bytes) {
    return static_cast<double>(bytes) / (1024.0 * 1024.0);
}

template <typename T>
T load(const uint8_t* p) {
    T v;
    std::memcpy(&v, p, sizeof(v));
    return v;
}

template <typename T>
void store(uint8_t* p, T v) {
    std::memcpy(p, &v, sizeof(v));
}

// ---- sockets ------------------------------------------------------------------------------

bool read_full(int fd, void* data, size_t n) {
    auto* p = static_cast<uint8_t*>(data);
    while (n > 0) {
        const ssize_t r = recv(fd, p, n, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        p += r;
        n -= static_cast<size_t>(r);
    }
    return true;
}

bool write_full(int fd, const void* data, size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    while (n > 0) {
        const ssize_t r = send(fd, p, n, MSG_NOSIGNAL);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        p += r;
        n -= static_cast<size_t>(r);
    }
    return true;
}

// Moves n bytes from one socket to the other through buf.
bool pump(int from, int to, uint64_t n, std::vector<uint8_t>& buf) {
    while (n > 0) {
        const size_t chunk = n < buf.size() ? static_cast<size_t>(n) : buf.size();
        if (!read_full(from, buf.data(), chunk) || !write_full(to, buf.data(), chunk)) return false;
        n -= chunk;
    }
    return true;
}

// Request and reply are small: latency, not throughput (ggml's own sockets do the same).
void no_delay(int fd) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int connect_loopback(int port) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
        close(fd);
        return -1;
    }
    no_delay(fd);
    return fd;
}

// Sends HELLO with no transport capabilities (the proxy relays plain TCP, so neither side may
// switch to another transport) and reads the reply. "" or why it failed.
std::string say_hello(int fd, uint8_t reply[kHelloReply]) {
    uint8_t req[1 + 8 + kHelloRequest] = {};
    req[0] = kHello;
    store<uint64_t>(req + 1, kHelloRequest);
    if (!write_full(fd, req, sizeof(req))) return "it hung up";
    uint64_t size = 0;
    if (!read_full(fd, &size, sizeof(size))) return "it hung up on HELLO";
    if (size != kHelloReply) {
        return "its HELLO reply has " + std::to_string(size) + " bytes, not " +
               std::to_string(kHelloReply) + ": it speaks another ggml RPC protocol version";
    }
    if (!read_full(fd, reply, kHelloReply)) return "it hung up on HELLO";
    if (reply[0] != kRpcProtocolMajor) {
        return "it speaks ggml RPC protocol " + std::to_string(reply[0]) + "." +
               std::to_string(reply[1]) + "." + std::to_string(reply[2]) +
               "; --mem understands protocol " + std::to_string(kRpcProtocolMajor) + " only";
    }
    return "";
}

void close_fd(int* fd) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
}

}  // namespace

bool check_rpc_server(int port, int timeout_ms, std::string* error) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    int fd = -1;
    while ((fd = connect_loopback(port)) < 0) {
        if (std::chrono::steady_clock::now() >= deadline) {
            *error = "ggml's RPC server on 127.0.0.1:" + std::to_string(port) +
                     " did not start within " + std::to_string(timeout_ms / 1000) + " s";
            return false;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    uint8_t reply[kHelloReply];
    const std::string why = say_hello(fd, reply);
    close(fd);
    if (!why.empty()) {
        *error = "ggml's RPC server on 127.0.0.1:" + std::to_string(port) + ": " + why;
        return false;
    }
    return true;
}

MemLimitProxy::MemLimitProxy(uint64_t limit_bytes, int inner_port, LogFn log)
    : limit_(limit_bytes), inner_port_(inner_port), log_(std::move(log)) {
    if (!log_) log_ = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
}

MemLimitProxy::~MemLimitProxy() {
    stop();
}

bool MemLimitProxy::listen(const std::string& ip, int port, std::string* error) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        *error = std::string("socket: ") + std::strerror(errno);
        return false;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    if (inet_pton(AF_INET, ip.c_str(), &a.sin_addr) != 1) {
        *error = "not an IPv4 address: " + ip;
        close(fd);
        return false;
    }
    socklen_t len = sizeof(a);
    if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || ::listen(fd, 16) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
        *error = std::strerror(errno);
        close(fd);
        return false;
    }
    listen_fd_ = fd;
    port_ = ntohs(a.sin_port);
    return true;
}

void MemLimitProxy::start() {
    accept_thread_ = std::thread([this] { serve(); });
}

void MemLimitProxy::serve() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        serving_ = true;
    }
    while (!stop_) {
        pollfd p{listen_fd_, POLLIN, 0};
        if (poll(&p, 1, 100) <= 0) continue;  // wakes up now and then to see stop_
        const int client = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (client < 0) continue;
        no_delay(client);
        reap_finished();
        std::lock_guard<std::mutex> lock(mutex_);
        if (stop_) {
            close(client);
            break;
        }
        sessions_.push_back(std::make_unique<Session>());
        Session* s = sessions_.back().get();
        s->client = client;
        s->thread = std::thread([this, s] { run_session(s); });
    }
    std::lock_guard<std::mutex> lock(mutex_);
    serving_ = false;
    stopped_.notify_all();
}

void MemLimitProxy::stop() {
    stop_ = true;
    if (accept_thread_.joinable()) accept_thread_.join();
    std::list<std::unique_ptr<Session>> sessions;
    {
        // serve() on another thread adds no session once it has returned.
        std::unique_lock<std::mutex> lock(mutex_);
        stopped_.wait(lock, [this] { return !serving_; });
        for (auto& s : sessions_) {
            if (s->client >= 0) shutdown(s->client, SHUT_RDWR);
            if (s->inner >= 0) shutdown(s->inner, SHUT_RDWR);
        }
        sessions.swap(sessions_);
    }
    // The sessions' threads end on the hung-up sockets.
    for (auto& s : sessions) {
        if (s->thread.joinable()) s->thread.join();
    }
    close_fd(&listen_fd_);
}

uint64_t MemLimitProxy::in_use(uint32_t device) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = used_.find(device);
    return it == used_.end() ? 0 : it->second;
}

int MemLimitProxy::sessions() const {
    std::lock_guard<std::mutex> lock(mutex_);
    int n = 0;
    for (const auto& s : sessions_) n += s->done ? 0 : 1;
    return n;
}

void MemLimitProxy::reap_finished() {
    std::list<std::unique_ptr<Session>> finished;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        for (auto it = sessions_.begin(); it != sessions_.end();) {
            if ((*it)->done) {
                finished.push_back(std::move(*it));
                it = sessions_.erase(it);
            } else {
                ++it;
            }
        }
    }
    for (auto& s : finished) s->thread.join();
}

void MemLimitProxy::run_session(Session* s) {
    std::vector<uint8_t> buf(kStreamBuffer);
    // A client that connects and hangs up without a word (a port probe) never reaches ggml's
    // server: handshake() connects to it only once the client has said HELLO.
    if (handshake(s)) serve_commands(s, buf);
    // ggml's server frees a client's buffers when it hangs up, and so does closing here.
    release_all(s);
    std::lock_guard<std::mutex> lock(mutex_);
    close_fd(&s->client);
    close_fd(&s->inner);
    s->done = true;
}

bool MemLimitProxy::handshake(Session* s) {
    uint8_t head[1 + 8];
    if (!read_full(s->client, head, sizeof(head))) return false;
    const uint64_t size = load<uint64_t>(head + 1);
    if (head[0] != kHello) {
        log_("a client did not start with HELLO (command " + std::to_string(head[0]) +
             "): not a ggml RPC client; hung up");
        return false;
    }
    if (size != kHelloRequest) {
        log_("a client's HELLO has " + std::to_string(size) + " bytes, not " +
             std::to_string(kHelloRequest) +
             ": it speaks another ggml RPC protocol version than this worker (" +
             std::to_string(kRpcProtocolMajor) + "); hung up");
        return false;
    }
    uint8_t caps[kHelloRequest];
    if (!read_full(s->client, caps, sizeof(caps))) return false;

    const int inner = connect_loopback(inner_port_);
    if (inner < 0) {
        log_("cannot reach ggml's RPC server on 127.0.0.1:" + std::to_string(inner_port_) + ": " +
             std::strerror(errno));
        return false;
    }
    {
        std::lock_guard<std::mutex> lock(mutex_);
        s->inner = inner;
        if (stop_) return false;
    }
    uint8_t reply[8 + kHelloReply];
    store<uint64_t>(reply, kHelloReply);
    const std::string why = say_hello(s->inner, reply + 8);
    if (!why.empty()) {
        log_("ggml's RPC server: " + why + "; hung up on the client");
        return false;
    }
    std::memset(reply + 8 + 4, 0, kConnCaps);  // no transport upgrade: see say_hello
    return write_full(s->client, reply, sizeof(reply));
}

// One command after another until either side hangs up (or breaks the protocol).
bool MemLimitProxy::serve_commands(Session* s, std::vector<uint8_t>& buf) {
    for (;;) {
        uint8_t head[1 + 8];
        if (!read_full(s->client, head, sizeof(head))) return true;  // the client is done
        const uint8_t cmd = head[0];
        const uint64_t size = load<uint64_t>(head + 1);
        if (cmd >= kCmdCount || cmd == kHello) {
            // ggml's server hangs up on these as well.
            log_("a client sent " +
                 std::string(cmd == kHello ? "a second HELLO"
                                           : "unknown command " + std::to_string(cmd)) +
                 "; hung up");
            return false;
        }
        bool ok = true;
        switch (cmd) {
            case kAllocBuffer:
                ok = alloc_buffer(s, size);
                break;
            case kFreeBuffer:
                ok = free_buffer(s, size);
                break;
            case kGetDeviceMemory:
                ok = device_memory(s, size);
                break;
            default: {
                // Header and as much of the payload as fits go out in one write.
                std::memcpy(buf.data(), head, sizeof(head));
                const size_t first = static_cast<size_t>(
                    std::min<uint64_t>(size, static_cast<uint64_t>(buf.size() - sizeof(head))));
                ok = read_full(s->client, buf.data() + sizeof(head), first) &&
                     write_full(s->inner, buf.data(), sizeof(head) + first) &&
                     pump(s->client, s->inner, size - first, buf);
                if (ok && kAnswered[cmd]) {  // the same for the reply
                    ok = read_full(s->inner, buf.data(), 8);
                    const uint64_t reply_size = ok ? load<uint64_t>(buf.data()) : 0;
                    const size_t head_part = static_cast<size_t>(
                        std::min<uint64_t>(reply_size, static_cast<uint64_t>(buf.size() - 8)));
                    ok = ok && read_full(s->inner, buf.data() + 8, head_part) &&
                         write_full(s->client, buf.data(), 8 + head_part) &&
                         pump(s->inner, s->client, reply_size - head_part, buf);
                }
            }
        }
        if (!ok) return false;
    }
}

// Reads a fixed-size request of command `cmd` whose payload size the client gave as `size`
// into req (header included). False (after logging) when the size is not the protocol's.
bool MemLimitProxy::read_request(Session* s, uint8_t cmd, uint64_t size, uint8_t* req,
                                 size_t payload, const char* name) {
    if (size != payload) {
        log_(std::string("a client's ") + name + " has " + std::to_string(size) + " bytes, not " +
             std::to_string(payload) + "; hung up");
        return false;
    }
    req[0] = cmd;
    store<uint64_t>(req + 1, payload);
    return read_full(s->client, req + 9, payload);
}

// Reads the server's reply of a fixed size into reply (size included).
bool MemLimitProxy::read_reply(Session* s, uint8_t* reply, size_t payload, const char* name) {
    if (!read_full(s->inner, reply, 8)) return false;
    const uint64_t size = load<uint64_t>(reply);
    if (size != payload) {
        log_(std::string("ggml's RPC server answered ") + name + " with " + std::to_string(size) +
             " bytes, not " + std::to_string(payload) + "; hung up");
        return false;
    }
    return read_full(s->inner, reply + 8, payload);
}

bool MemLimitProxy::alloc_buffer(Session* s, uint64_t size) {
    uint8_t req[1 + 8 + kAllocRequest];
    if (!read_request(s, kAllocBuffer, size, req, kAllocRequest, "ALLOC_BUFFER")) return false;
    const uint32_t device = load<uint32_t>(req + 9);
    const uint64_t asked = load<uint64_t>(req + 9 + 4);

    uint8_t reply[8 + kAllocReply] = {};
    auto refuse = [&](uint64_t bytes, uint64_t used) {
        char line[256];
        std::snprintf(line, sizeof(line),
                      "refused a buffer of %.2f MiB on device %u: %.2f MiB in use, limit %.2f MiB "
                      "(--mem)",
                      mib(bytes), device, mib(used), mib(limit_));
        log_(line);
        // ggml's server answers a failed allocation with a null pointer and size 0.
        std::memset(reply, 0, sizeof(reply));
        store<uint64_t>(reply, kAllocReply);
        return write_full(s->client, reply, sizeof(reply));
    };

    // What is asked is reserved before the server sees it, so that clients asking at once
    // cannot both pass the check; then the reservation becomes the size the server reports.
    uint64_t used_before = 0;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        uint64_t& used = used_[device];
        used_before = used;
        if (asked <= limit_ - used) used += asked;
    }
    if (asked > limit_ - used_before) return refuse(asked, used_before);

    const bool ok =
        write_full(s->inner, req, sizeof(req)) && read_reply(s, reply, kAllocReply, "ALLOC_BUFFER");
    const uint64_t ptr = load<uint64_t>(reply + 8);
    const uint64_t got = load<uint64_t>(reply + 16);
    bool over = false;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        uint64_t& used = used_[device];
        used -= asked;
        used_before = used;
        if (ok && ptr != 0) {
            over = got > limit_ - used;
            if (!over) {
                used += got;
                s->buffers[ptr] = Buffer{device, got};
            }
        }
    }
    if (!ok) return false;
    if (over) {
        // The server made the buffer larger than asked, past the limit: free it again.
        uint8_t fr[1 + 8 + kFreeRequest];
        fr[0] = kFreeBuffer;
        store<uint64_t>(fr + 1, kFreeRequest);
        store<uint64_t>(fr + 9, ptr);
        if (!write_full(s->inner, fr, sizeof(fr))) return false;
        return refuse(got, used_before);
    }
    return write_full(s->client, reply, sizeof(reply));
}

bool MemLimitProxy::free_buffer(Session* s, uint64_t size) {
    uint8_t req[1 + 8 + kFreeRequest];
    if (!read_request(s, kFreeBuffer, size, req, kFreeRequest, "FREE_BUFFER")) return false;
    if (!write_full(s->inner, req, sizeof(req))) return false;
    // No reply: the server frees it before it reads the next command, so the bytes are back.
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = s->buffers.find(load<uint64_t>(req + 9));
    if (it != s->buffers.end()) {
        used_[it->second.device] -= it->second.size;
        s->buffers.erase(it);
    }
    return true;
}

bool MemLimitProxy::device_memory(Session* s, uint64_t size) {
    uint8_t req[1 + 8 + kMemoryRequest];
    if (!read_request(s, kGetDeviceMemory, size, req, kMemoryRequest, "GET_DEVICE_MEMORY")) {
        return false;
    }
    // The server still answers (and checks the device index); its figures are replaced.
    uint8_t reply[8 + kMemoryReply];
    if (!write_full(s->inner, req, sizeof(req)) ||
        !read_reply(s, reply, kMemoryReply, "GET_DEVICE_MEMORY")) {
        return false;
    }
    store<uint64_t>(reply + 8, limit_);   // free
    store<uint64_t>(reply + 16, limit_);  // total
    return write_full(s->client, reply, sizeof(reply));
}

void MemLimitProxy::release_all(Session* s) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& b : s->buffers) used_[b.second.device] -= b.second.size;
    s->buffers.clear();
}

}  // namespace ggdiff_rpc
