// A client that speaks ggml's RPC protocol (version 8) byte by byte, for the --mem tests:
// it can do what ggml's own client never does (hang up in the middle of a payload, say HELLO
// in another protocol's words) and reads replies with a deadline instead of aborting.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

namespace rpc_test {

// Protocol 8 facts (ggml-rpc.cpp): command numbers and fixed message sizes.
enum RawCmd : uint8_t {
    kRawAllocBuffer = 0,
    kRawFreeBuffer = 4,
    kRawSetTensor = 6,
    kRawGetDeviceMemory = 11,
    kRawHello = 14,
    kRawDeviceCount = 15,
};
constexpr uint64_t kRawHelloRequest = 24;  // transport caps
constexpr uint64_t kRawHelloReply = 28;    // major, minor, patch, padding, caps

class RawRpcClient {
  public:
    RawRpcClient() = default;
    RawRpcClient(const RawRpcClient&) = delete;
    RawRpcClient& operator=(const RawRpcClient&) = delete;
    ~RawRpcClient() { close(); }

    // Connects to 127.0.0.1:port; every later read waits at most timeout_ms.
    bool connect(int port, int timeout_ms = 20000) {
        close();
        fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd_ < 0) return false;
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons(static_cast<uint16_t>(port));
        if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
            close();
            return false;
        }
        int one = 1;
        setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        timeout_ms_ = timeout_ms;
        return true;
    }
    void close() {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
    }

    bool send_bytes(const void* data, size_t n) {
        const auto* p = static_cast<const uint8_t*>(data);
        while (n > 0) {
            const ssize_t r = send(fd_, p, n, MSG_NOSIGNAL);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) return false;
            p += r;
            n -= static_cast<size_t>(r);
        }
        return true;
    }
    // Command byte and payload size (the payload follows with send_bytes).
    bool send_header(uint8_t cmd, uint64_t size) {
        uint8_t head[9];
        head[0] = cmd;
        std::memcpy(head + 1, &size, sizeof(size));
        return send_bytes(head, sizeof(head));
    }
    bool send_cmd(uint8_t cmd, const void* payload, uint64_t size) {
        return send_header(cmd, size) && send_bytes(payload, static_cast<size_t>(size));
    }
    bool recv_bytes(void* data, size_t n) {
        auto* p = static_cast<uint8_t*>(data);
        while (n > 0) {
            pollfd pfd{fd_, POLLIN, 0};
            if (poll(&pfd, 1, timeout_ms_) <= 0) return false;
            const ssize_t r = recv(fd_, p, n, 0);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) return false;
            p += r;
            n -= static_cast<size_t>(r);
        }
        return true;
    }
    // A reply of exactly `size` bytes (its 8-byte size first).
    bool recv_reply(void* out, uint64_t size) {
        uint64_t got = 0;
        return recv_bytes(&got, sizeof(got)) && got == size &&
               recv_bytes(out, static_cast<size_t>(size));
    }
    // True when the other side closes the connection within timeout_ms (data before the
    // close is skipped).
    bool hung_up(int timeout_ms) {
        uint8_t sink[4096];
        for (;;) {
            pollfd pfd{fd_, POLLIN, 0};
            if (poll(&pfd, 1, timeout_ms) <= 0) return false;
            const ssize_t r = recv(fd_, sink, sizeof(sink), 0);
            if (r == 0 || (r < 0 && errno != EINTR)) return true;
        }
    }

    // HELLO without transport caps; *major (may be null) gets the server's major version.
    bool hello(uint8_t* major = nullptr) {
        uint8_t caps[kRawHelloRequest] = {};
        uint8_t reply[kRawHelloReply] = {};
        if (!send_cmd(kRawHello, caps, sizeof(caps)) || !recv_reply(reply, sizeof(reply))) {
            return false;
        }
        if (major) *major = reply[0];
        return true;
    }
    bool alloc(uint32_t device, uint64_t size, uint64_t* ptr, uint64_t* got) {
        uint8_t req[12];
        std::memcpy(req, &device, 4);
        std::memcpy(req + 4, &size, 8);
        uint64_t reply[2] = {0, 0};
        if (!send_cmd(kRawAllocBuffer, req, sizeof(req)) || !recv_reply(reply, sizeof(reply))) {
            return false;
        }
        *ptr = reply[0];
        *got = reply[1];
        return true;
    }
    bool free_buffer(uint64_t ptr) { return send_cmd(kRawFreeBuffer, &ptr, sizeof(ptr)); }
    bool device_memory(uint32_t device, uint64_t* free, uint64_t* total) {
        uint64_t reply[2] = {0, 0};
        if (!send_cmd(kRawGetDeviceMemory, &device, sizeof(device)) ||
            !recv_reply(reply, sizeof(reply))) {
            return false;
        }
        *free = reply[0];
        *total = reply[1];
        return true;
    }

  private:
    int fd_ = -1;
    int timeout_ms_ = 20000;
};

}  // namespace rpc_test
