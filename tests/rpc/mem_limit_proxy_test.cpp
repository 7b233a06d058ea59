// The --mem proxy class in front of a stand-in for ggml's RPC server: the limit per device,
// buffers the server makes larger than asked, other protocol versions on either side,
// clients that hang up, and payloads larger than the proxy's buffer.
#include "mem_limit_proxy.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "raw_rpc_client.h"
#include "rpc_test_util.h"

namespace {

using rpc_test::RawRpcClient;

constexpr uint64_t kMiB = 1ull << 20;

bool read_all(int fd, void* data, size_t n) {
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

bool write_all(int fd, const void* data, size_t n) {
    return send(fd, data, n, MSG_NOSIGNAL) == static_cast<ssize_t>(n);
}

// A stand-in for ggml's RPC server, one client at a time: HELLO (answering `major`),
// DEVICE_COUNT (2), ALLOC_BUFFER (a made-up pointer, the size asked plus `pad`), FREE_BUFFER
// (noted), GET_DEVICE_MEMORY (1 TiB free and total); any other command's payload is counted
// and dropped.
class FakeRpcServer {
  public:
    explicit FakeRpcServer(uint8_t major = 8, uint64_t pad = 0) : major_(major), pad_(pad) {
        fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof(a);
        if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
            listen(fd_, 8) != 0 || getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
            return;
        }
        port_ = ntohs(a.sin_port);
        thread_ = std::thread([this] { loop(); });
    }
    ~FakeRpcServer() {
        stop_ = true;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            if (client_ >= 0) shutdown(client_, SHUT_RDWR);
        }
        if (thread_.joinable()) thread_.join();
        if (fd_ >= 0) close(fd_);
    }
    int port() const { return port_; }
    uint64_t dropped_bytes() const {
        std::lock_guard<std::mutex> lock(mutex_);
        return dropped_;
    }
    std::vector<uint64_t> freed() const {
        std::lock_guard<std::mutex> lock(mutex_);
        return freed_;
    }
    int clients() const {
        std::lock_guard<std::mutex> lock(mutex_);
        return clients_;
    }

  private:
    void loop() {
        while (!stop_) {
            pollfd p{fd_, POLLIN, 0};
            if (poll(&p, 1, 50) <= 0) continue;
            const int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
            if (c < 0) continue;
            {
                std::lock_guard<std::mutex> lock(mutex_);
                client_ = c;
                ++clients_;
            }
            serve(c);
            std::lock_guard<std::mutex> lock(mutex_);
            client_ = -1;
            close(c);
        }
    }
    void serve(int c) {
        std::vector<uint8_t> buf(1 << 16);
        uint8_t head[9];
        while (read_all(c, head, sizeof(head))) {
            uint64_t size = 0;
            std::memcpy(&size, head + 1, sizeof(size));
            if (head[0] == 14 || head[0] == 0 || head[0] == 4 || head[0] == 11) {
                if (size > buf.size() || !read_all(c, buf.data(), size)) return;
            }
            switch (head[0]) {
                case 14: {  // HELLO
                    uint8_t reply[8 + 28] = {};
                    reply[0] = 28;
                    reply[8] = major_;
                    if (!write_all(c, reply, sizeof(reply))) return;
                    break;
                }
                case 15: {  // DEVICE_COUNT
                    uint8_t reply[8 + 4] = {4, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0};
                    if (!write_all(c, reply, sizeof(reply))) return;
                    break;
                }
                case 0: {  // ALLOC_BUFFER
                    uint64_t asked = 0;
                    std::memcpy(&asked, buf.data() + 4, 8);
                    next_ptr_ += 0x1000;
                    const uint64_t reply[3] = {16, next_ptr_, asked + pad_};
                    if (!write_all(c, reply, sizeof(reply))) return;
                    break;
                }
                case 4: {  // FREE_BUFFER
                    uint64_t ptr = 0;
                    std::memcpy(&ptr, buf.data(), 8);
                    std::lock_guard<std::mutex> lock(mutex_);
                    freed_.push_back(ptr);
                    break;
                }
                case 11: {  // GET_DEVICE_MEMORY
                    const uint64_t reply[3] = {16, 1ull << 40, 1ull << 40};
                    if (!write_all(c, reply, sizeof(reply))) return;
                    break;
                }
                default:
                    while (size > 0) {
                        const size_t n = std::min<uint64_t>(size, buf.size());
                        if (!read_all(c, buf.data(), n)) return;
                        size -= n;
                        std::lock_guard<std::mutex> lock(mutex_);
                        dropped_ += n;
                    }
            }
        }
    }

    const uint8_t major_;
    const uint64_t pad_;
    int fd_ = -1;
    int port_ = -1;
    uint64_t next_ptr_ = 0x10000;
    std::atomic<bool> stop_{false};
    std::thread thread_;
    mutable std::mutex mutex_;
    int client_ = -1;
    int clients_ = 0;
    uint64_t dropped_ = 0;
    std::vector<uint64_t> freed_;
};

// A MemLimitProxy on a free loopback port in front of `server`, keeping its log lines.
class Proxy {
  public:
    Proxy(uint64_t limit, const FakeRpcServer& server)
        : proxy_(limit, server.port(), [this](const std::string& line) {
              std::lock_guard<std::mutex> lock(mutex_);
              log_ += line + "\n";
          }) {
        std::string error;
        ok_ = proxy_.listen("127.0.0.1", 0, &error);
        EXPECT_TRUE(ok_) << error;
        if (ok_) proxy_.start();
    }
    bool ok() const { return ok_; }
    int port() const { return proxy_.port(); }
    ggdiff_rpc::MemLimitProxy* operator->() { return &proxy_; }
    std::string log() const {
        std::lock_guard<std::mutex> lock(mutex_);
        return log_;
    }

  private:
    mutable std::mutex mutex_;
    std::string log_;
    ggdiff_rpc::MemLimitProxy proxy_;
    bool ok_ = false;
};

bool eventually(const std::function<bool()>& cond, int timeout_ms = 5000) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (!cond()) {
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
}

TEST(MemLimitProxy, LimitIsPerDeviceAndFreeingGivesBytesBack) {
    FakeRpcServer server;
    Proxy proxy(64 * kMiB, server);
    ASSERT_TRUE(proxy.ok());
    RawRpcClient c;
    ASSERT_TRUE(c.connect(proxy.port()));
    uint8_t major = 0;
    ASSERT_TRUE(c.hello(&major));
    EXPECT_EQ(major, 8);

    uint64_t free = 0, total = 0;
    for (uint32_t dev : {0u, 1u}) {
        ASSERT_TRUE(c.device_memory(dev, &free, &total));
        EXPECT_EQ(free, 64 * kMiB) << "device " << dev;  // the server said 1 TiB
        EXPECT_EQ(total, 64 * kMiB) << "device " << dev;
    }

    uint64_t a = 0, b = 0, size = 0;
    ASSERT_TRUE(c.alloc(0, 40 * kMiB, &a, &size));
    EXPECT_NE(a, 0u);
    EXPECT_EQ(size, 40 * kMiB);
    ASSERT_TRUE(c.alloc(1, 64 * kMiB, &b, &size));  // device 1 has its own 64 MiB
    EXPECT_NE(b, 0u);
    uint64_t refused = 1, refused_size = 1;
    ASSERT_TRUE(c.alloc(0, 24 * kMiB + 1, &refused, &refused_size));
    EXPECT_EQ(refused, 0u);
    EXPECT_EQ(refused_size, 0u);
    ASSERT_TRUE(c.alloc(1, 1, &refused, &refused_size));
    EXPECT_EQ(refused, 0u);
    EXPECT_EQ(proxy->in_use(0), 40 * kMiB);
    EXPECT_EQ(proxy->in_use(1), 64 * kMiB);
    EXPECT_NE(proxy.log().find("refused a buffer of 24.00 MiB on device 0: 40.00 MiB in use, "
                               "limit 64.00 MiB (--mem)"),
              std::string::npos)
        << proxy.log();

    // Exactly up to the limit fits.
    uint64_t rest = 0;
    ASSERT_TRUE(c.alloc(0, 24 * kMiB, &rest, &size));
    EXPECT_NE(rest, 0u);
    EXPECT_EQ(proxy->in_use(0), 64 * kMiB);

    ASSERT_TRUE(c.free_buffer(a));
    ASSERT_TRUE(c.device_memory(0, &free, &total));  // a reply: the free has been handled
    EXPECT_EQ(proxy->in_use(0), 24 * kMiB);
    EXPECT_EQ(server.freed(), std::vector<uint64_t>{a});
    uint64_t again = 0;
    ASSERT_TRUE(c.alloc(0, 40 * kMiB, &again, &size));
    EXPECT_NE(again, 0u);
    EXPECT_EQ(proxy->in_use(0), 64 * kMiB);
    EXPECT_EQ(proxy->in_use(1), 64 * kMiB);
}

TEST(MemLimitProxy, BufferMadeLargerThanAskedPastTheLimitIsFreedAndRefused) {
    FakeRpcServer server(8, /*pad=*/kMiB);
    Proxy proxy(64 * kMiB, server);
    ASSERT_TRUE(proxy.ok());
    RawRpcClient c;
    ASSERT_TRUE(c.connect(proxy.port()));
    ASSERT_TRUE(c.hello());
    uint64_t ptr = 0, size = 0;
    ASSERT_TRUE(c.alloc(0, 32 * kMiB, &ptr, &size));
    EXPECT_NE(ptr, 0u);
    EXPECT_EQ(size, 33 * kMiB);
    EXPECT_EQ(proxy->in_use(0), 33 * kMiB);           // what the server holds, not what was asked
    ASSERT_TRUE(c.alloc(0, 31 * kMiB, &ptr, &size));  // fits as asked, not as made
    EXPECT_EQ(ptr, 0u);
    EXPECT_EQ(size, 0u);
    ASSERT_TRUE(eventually([&] { return server.freed().size() == 1; }));
    EXPECT_EQ(proxy->in_use(0), 33 * kMiB);
}

TEST(MemLimitProxy, ServerOfAnotherProtocolVersionIsRefusedClearly) {
    FakeRpcServer server(/*major=*/9);
    std::string error;
    EXPECT_FALSE(ggdiff_rpc::check_rpc_server(server.port(), 5000, &error));
    EXPECT_NE(error.find("protocol 9.0.0"), std::string::npos) << error;
    EXPECT_NE(error.find("protocol 8 only"), std::string::npos) << error;

    Proxy proxy(64 * kMiB, server);
    ASSERT_TRUE(proxy.ok());
    RawRpcClient c;
    ASSERT_TRUE(c.connect(proxy.port()));
    EXPECT_FALSE(c.hello());
    EXPECT_NE(proxy.log().find("protocol 9.0.0"), std::string::npos) << proxy.log();
}

TEST(MemLimitProxy, ClientOfAnotherProtocolVersionIsHungUpOn) {
    FakeRpcServer server;
    Proxy proxy(64 * kMiB, server);
    ASSERT_TRUE(proxy.ok());
    RawRpcClient old;
    ASSERT_TRUE(old.connect(proxy.port()));
    ASSERT_TRUE(old.send_header(rpc_test::kRawHello, 0));  // protocol 3's HELLO: no payload
    EXPECT_TRUE(old.hung_up(5000));
    EXPECT_NE(proxy.log().find("another ggml RPC protocol version"), std::string::npos)
        << proxy.log();
    EXPECT_EQ(server.clients(), 0) << "the server must not see a client the proxy refused";

    RawRpcClient c;  // the next one is served
    ASSERT_TRUE(c.connect(proxy.port()));
    EXPECT_TRUE(c.hello());
}

TEST(MemLimitProxy, ClientThatHangsUpMidPayloadGivesItsBuffersBack) {
    FakeRpcServer server;
    Proxy proxy(64 * kMiB, server);
    ASSERT_TRUE(proxy.ok());
    {
        RawRpcClient c;
        ASSERT_TRUE(c.connect(proxy.port()));
        ASSERT_TRUE(c.hello());
        uint64_t ptr = 0, size = 0;
        ASSERT_TRUE(c.alloc(0, 48 * kMiB, &ptr, &size));
        ASSERT_NE(ptr, 0u);
        // A SET_TENSOR that announces 32 MiB and sends 1 MiB before hanging up.
        ASSERT_TRUE(c.send_header(rpc_test::kRawSetTensor, 32 * kMiB));
        std::vector<uint8_t> part(kMiB, 0x5a);
        ASSERT_TRUE(c.send_bytes(part.data(), part.size()));
    }
    ASSERT_TRUE(eventually([&] { return proxy->sessions() == 0; }));
    EXPECT_EQ(proxy->in_use(0), 0u);

    RawRpcClient next;
    ASSERT_TRUE(next.connect(proxy.port()));
    ASSERT_TRUE(next.hello());
    uint64_t ptr = 0, size = 0;
    ASSERT_TRUE(next.alloc(0, 60 * kMiB, &ptr, &size));
    EXPECT_NE(ptr, 0u) << proxy.log();
}

TEST(MemLimitProxy, PayloadsLargerThanItsBufferStreamThroughInOrder) {
    FakeRpcServer server;
    Proxy proxy(64 * kMiB, server);
    ASSERT_TRUE(proxy.ok());
    RawRpcClient c;
    ASSERT_TRUE(c.connect(proxy.port()));
    ASSERT_TRUE(c.hello());
    const uint64_t n = 40 * kMiB + 12345;  // not a multiple of anything
    ASSERT_TRUE(c.send_header(rpc_test::kRawSetTensor, n));
    std::vector<uint8_t> chunk(3 * kMiB + 7, 0xa5);
    for (uint64_t left = n; left > 0;) {
        const size_t k = static_cast<size_t>(std::min<uint64_t>(left, chunk.size()));
        ASSERT_TRUE(c.send_bytes(chunk.data(), k));
        left -= k;
    }
    uint64_t free = 0, total = 0;
    ASSERT_TRUE(c.device_memory(0, &free, &total));  // the stream is still in step
    EXPECT_EQ(total, 64 * kMiB);
    EXPECT_EQ(server.dropped_bytes(), n);
}

}  // namespace
