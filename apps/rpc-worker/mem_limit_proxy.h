// ggdiff-rpc --mem: a proxy for ggml's RPC protocol (version 8) that sits in front of ggml's
// own RPC server and makes each served device look smaller than it is. Clients that ask a
// device's memory are told free = total = the limit; a buffer allocation that would take the
// device's live buffers past the limit is answered the way ggml's server answers a failed one
// (a null buffer); freeing a buffer, or a client hanging up, gives its bytes back.
//
// ggml's server cannot be wrapped from outside (the Debian package ships no
// ggml-backend-impl.h), so the proxy speaks the wire protocol: each request is a 1-byte
// command, an 8-byte payload size and the payload; the commands that are answered get an
// 8-byte size and the reply. Everything but HELLO, ALLOC_BUFFER, FREE_BUFFER and
// GET_DEVICE_MEMORY is streamed through a fixed buffer, so multi-GiB tensors pass without
// being held in memory.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace ggdiff_rpc {

// The protocol this proxy understands (RPC_PROTO_MAJOR_VERSION of ggml-rpc.h).
constexpr uint8_t kRpcProtocolMajor = 8;

// Connects to the ggml RPC server on 127.0.0.1:port (retrying while it starts, up to
// timeout_ms), says HELLO and checks that it speaks protocol 8. False with *error saying why.
bool check_rpc_server(int port, int timeout_ms, std::string* error);

class MemLimitProxy {
  public:
    using LogFn = std::function<void(const std::string&)>;

    // Forwards to ggml's RPC server on 127.0.0.1:inner_port, limiting every device it serves
    // to limit_bytes. `log` gets one line per event worth a user's attention (default:
    // stderr).
    MemLimitProxy(uint64_t limit_bytes, int inner_port, LogFn log = {});
    ~MemLimitProxy();
    MemLimitProxy(const MemLimitProxy&) = delete;
    MemLimitProxy& operator=(const MemLimitProxy&) = delete;

    // Binds and listens on ip:port (IPv4; port 0: a free one, see port()).
    bool listen(const std::string& ip, int port, std::string* error);
    int port() const { return port_; }

    // Accepts clients until stop(), each served on its own thread: serve() on the calling
    // thread, start() on a thread of its own.
    void serve();
    void start();
    // Stops accepting (waiting for serve() to return), hangs up on every client and waits
    // for their threads. Call it from another thread than serve()'s.
    void stop();

    // Bytes of live buffers on `device`, over all clients.
    uint64_t in_use(uint32_t device) const;
    // Clients being served now.
    int sessions() const;

  private:
    struct Buffer {
        uint32_t device;
        uint64_t size;
    };
    struct Session {
        int client = -1;
        int inner = -1;
        std::map<uint64_t, Buffer> buffers;  // by the server's remote pointer
        std::atomic<bool> done{false};
        std::thread thread;
    };

    void run_session(Session* s);
    bool serve_commands(Session* s, std::vector<uint8_t>& buf);
    bool handshake(Session* s);
    bool read_request(Session* s, uint8_t cmd, uint64_t size, uint8_t* req, size_t payload,
                      const char* name);
    bool read_reply(Session* s, uint8_t* reply, size_t payload, const char* name);
    bool alloc_buffer(Session* s, uint64_t size);
    bool free_buffer(Session* s, uint64_t size);
    bool device_memory(Session* s, uint64_t size);
    void release_all(Session* s);
    void reap_finished();

    const uint64_t limit_;
    const int inner_port_;
    LogFn log_;
    int listen_fd_ = -1;
    int port_ = 0;
    std::atomic<bool> stop_{false};
    std::thread accept_thread_;

    mutable std::mutex mutex_;  // guards used_, sessions_, serving_ and the sessions' fds
    std::condition_variable stopped_;
    bool serving_ = false;
    std::map<uint32_t, uint64_t> used_;
    std::list<std::unique_ptr<Session>> sessions_;
};

}  // namespace ggdiff_rpc
