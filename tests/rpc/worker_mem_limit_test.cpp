// ggdiff-rpc --mem 64: ggml's own RPC client (in this process) sees a 64 MiB device, buffers
// past it come back null and freed bytes can be allocated again; tensors and graphs pass
// through the limit unchanged; clients that hang up mid-payload or speak another protocol do
// not stop the worker. Without --mem the worker reports the machine's memory.
//
// ggml's RPC server serves one connection at a time, so every test lets its raw clients go
// before ggml's client connects (and keeps one ggml backend open while it needs its buffers
// on one connection).
//
// Under ctest every test runs in its own process. Run directly, the tests share one process
// and ggml keeps every RPC device registered after its worker stopped, so this file sorts
// after rpc_test.cpp, whose in-process test asks every registered device for its memory.
#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "devices/devices.h"
#include "raw_rpc_client.h"
#include "rpc_test_util.h"

namespace {

using rpc_test::RawRpcClient;
using rpc_test::Worker;

constexpr uint64_t kMiB = 1ull << 20;
constexpr int kLimitMiB = 64;

// Registers the worker's endpoint with ggml in this process and returns its RPC device.
ggml_backend_dev_t rpc_device(const Worker& w) {
    ggdiff::load_backends();
    std::vector<std::string> added;
    const ggdiff::Status st = ggdiff::add_rpc_servers(w.endpoint(), &added);
    EXPECT_TRUE(st.ok()) << st.message();
    if (!st.ok() || added.size() != 1) return nullptr;
    return ggdiff::find_device(added[0]);
}

class MemLimitedWorker : public ::testing::Test {
  protected:
    void SetUp() override {
        std::string error;
        ASSERT_TRUE(w_.start(&error, 1, kLimitMiB)) << error;
    }
    Worker w_;
};

TEST_F(MemLimitedWorker, AdvertisesTheLimitAsFreeAndTotal) {
    ggml_backend_dev_t dev = rpc_device(w_);
    ASSERT_NE(dev, nullptr);
    size_t free = 0, total = 0;
    ggml_backend_dev_memory(dev, &free, &total);
    EXPECT_EQ(free, kLimitMiB * kMiB);
    EXPECT_EQ(total, kLimitMiB * kMiB);
    const std::string log = w_.log();
    EXPECT_NE(log.find("ggdiff-rpc: serving CPU on " + w_.endpoint() +
                       " (1 threads, 64 MiB per device: --mem)"),
              std::string::npos)
        << log;
}

TEST_F(MemLimitedWorker, RefusesBuffersPastTheLimitAndTakesFreedBytesBack) {
    ggml_backend_dev_t dev = rpc_device(w_);
    ASSERT_NE(dev, nullptr);
    ggml_backend_t keep = ggml_backend_dev_init(dev, nullptr);  // one connection throughout
    ASSERT_NE(keep, nullptr);
    ggml_backend_buffer_type_t buft = ggml_backend_dev_buffer_type(dev);

    ggml_backend_buffer_t a = ggml_backend_buft_alloc_buffer(buft, 40 * kMiB);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(ggml_backend_buffer_get_size(a), 40 * kMiB);
    ggml_backend_buffer_t b = ggml_backend_buft_alloc_buffer(buft, 40 * kMiB);
    EXPECT_EQ(b, nullptr) << "40 + 40 MiB on a 64 MiB worker";
    const std::string log = w_.log();
    EXPECT_NE(log.find("ggdiff-rpc: refused a buffer of 40.00 MiB on device 0: 40.00 MiB in use, "
                       "limit 64.00 MiB (--mem)"),
              std::string::npos)
        << log;

    ggml_backend_buffer_free(a);
    ggml_backend_buffer_t c = ggml_backend_buft_alloc_buffer(buft, 40 * kMiB);
    EXPECT_NE(c, nullptr) << "the freed 40 MiB must be available again\n" << w_.log();
    ggml_backend_buffer_t d = ggml_backend_buft_alloc_buffer(buft, 24 * kMiB);
    EXPECT_NE(d, nullptr) << "40 + 24 MiB is exactly the limit\n" << w_.log();
    if (b) ggml_backend_buffer_free(b);
    if (c) ggml_backend_buffer_free(c);
    if (d) ggml_backend_buffer_free(d);
    ggml_backend_free(keep);
}

TEST_F(MemLimitedWorker, TensorsRoundTripThroughTheLimit) {
    ggml_backend_dev_t dev = rpc_device(w_);
    ASSERT_NE(dev, nullptr);
    ggml_backend_t backend = ggml_backend_dev_init(dev, nullptr);
    ASSERT_NE(backend, nullptr);
    ggml_init_params params{ggml_tensor_overhead() * 4, nullptr, true};
    ggml_context* ctx = ggml_init(params);
    const int64_t n_big = 20 * 1024 * 1024 / 4 + 3;  // a little over 20 MiB of floats
    ggml_tensor* big = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, n_big);
    ggml_tensor* small = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, 33, 7);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx, backend);
    ASSERT_NE(buf, nullptr) << w_.log();
    ASSERT_GT(ggml_nbytes(big), 16 * kMiB);

    std::vector<uint8_t> want(ggml_nbytes(big)), got(want.size());
    for (size_t i = 0; i < want.size(); ++i) want[i] = static_cast<uint8_t>(i * 131 + (i >> 13));
    // As weights, a payload over 10 MiB is first offered by hash (SET_TENSOR_HASH), then sent.
    ggml_backend_buffer_set_usage(buf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    ggml_backend_tensor_set(big, want.data(), 0, want.size());
    ggml_backend_tensor_get(big, got.data(), 0, got.size());
    EXPECT_TRUE(got == want) << "the 20 MiB tensor came back different";

    // As any other buffer: plain SET_TENSOR, also of a slice at an odd offset.
    ggml_backend_buffer_set_usage(buf, GGML_BACKEND_BUFFER_USAGE_ANY);
    std::reverse(want.begin(), want.end());
    ggml_backend_tensor_set(big, want.data(), 0, want.size());
    std::vector<uint8_t> slice(3 * kMiB + 5);
    std::iota(slice.begin(), slice.end(), uint8_t{7});
    const size_t offset = 7 * kMiB + 4;
    ggml_backend_tensor_set(big, slice.data(), offset, slice.size());
    std::memcpy(want.data() + offset, slice.data(), slice.size());
    ggml_backend_tensor_get(big, got.data(), 0, got.size());
    EXPECT_TRUE(got == want) << "the rewritten 20 MiB tensor came back different";
    std::vector<uint8_t> part(slice.size());
    ggml_backend_tensor_get(big, part.data(), offset, part.size());
    EXPECT_TRUE(part == slice);

    std::vector<ggml_fp16_t> halves(ggml_nelements(small)), back(halves.size());
    for (size_t i = 0; i < halves.size(); ++i) halves[i] = ggml_fp32_to_fp16(0.25f * i - 3.0f);
    ggml_backend_tensor_set(small, halves.data(), 0, ggml_nbytes(small));
    ggml_backend_tensor_get(small, back.data(), 0, ggml_nbytes(small));
    EXPECT_EQ(std::memcmp(halves.data(), back.data(), ggml_nbytes(small)), 0);

    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
    ggml_backend_free(backend);
}

// softmax(a^T b + bias) on `dev`, computed `times` times (the results of the last).
std::vector<float> small_graph_on(ggml_backend_dev_t dev, int times, std::string* error) {
    constexpr int K = 24, M = 10, N = 6;
    std::vector<float> a(K * M), b(K * N), bias(M), out(M * N);
    for (size_t i = 0; i < a.size(); ++i) a[i] = 0.5f * std::sin(0.37f * i + 1.0f);
    for (size_t i = 0; i < b.size(); ++i) b[i] = 0.7f * std::cos(0.23f * i + 2.0f);
    for (size_t i = 0; i < bias.size(); ++i) bias[i] = 0.1f * i;
    ggml_backend_t backend = ggml_backend_dev_init(dev, nullptr);
    if (!backend) {
        *error = std::string("cannot init ") + ggml_backend_dev_name(dev);
        return {};
    }
    ggml_init_params params{ggml_tensor_overhead() * 16 + ggml_graph_overhead(), nullptr, true};
    ggml_context* ctx = ggml_init(params);
    ggml_tensor* ta = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, K, M);
    ggml_tensor* tb = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, K, N);
    ggml_tensor* tbias = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, M);
    ggml_tensor* sm = ggml_soft_max(ctx, ggml_add(ctx, ggml_mul_mat(ctx, ta, tb), tbias));
    ggml_set_output(sm);
    ggml_cgraph* gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, sm);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx, backend);
    if (!buf) {
        *error = std::string("cannot allocate on ") + ggml_backend_dev_name(dev);
    } else {
        ggml_backend_tensor_set(ta, a.data(), 0, ggml_nbytes(ta));
        ggml_backend_tensor_set(tb, b.data(), 0, ggml_nbytes(tb));
        ggml_backend_tensor_set(tbias, bias.data(), 0, ggml_nbytes(tbias));
        for (int i = 0; i < times && error->empty(); ++i) {
            std::fill(out.begin(), out.end(), 0.f);
            if (ggml_backend_graph_compute(backend, gf) != GGML_STATUS_SUCCESS) {
                *error = std::string("graph_compute failed on ") + ggml_backend_dev_name(dev);
            } else {
                ggml_backend_tensor_get(sm, out.data(), 0, ggml_nbytes(sm));
            }
        }
        ggml_backend_buffer_free(buf);
    }
    ggml_free(ctx);
    ggml_backend_free(backend);
    return out;
}

TEST_F(MemLimitedWorker, GraphComputesThroughTheLimit) {
    ggml_backend_dev_t dev = rpc_device(w_);
    ASSERT_NE(dev, nullptr);
    ggml_backend_dev_t cpu = ggdiff::find_device("CPU");
    ASSERT_NE(cpu, nullptr);
    std::string error;
    const std::vector<float> want = small_graph_on(cpu, 1, &error);
    ASSERT_TRUE(error.empty()) << error;
    const std::vector<float> got = small_graph_on(dev, 2, &error);
    ASSERT_TRUE(error.empty()) << error << "\n" << w_.log();
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_NEAR(got[i], want[i], 1e-6 + 1e-5 * std::fabs(want[i])) << i;
    }
    float sum = 0;
    for (int i = 0; i < 10; ++i) sum += got[i];
    EXPECT_NEAR(sum, 1.0f, 1e-5f) << "a softmax column sums to 1";
}

TEST_F(MemLimitedWorker, ClientThatHangsUpMidPayloadLeavesTheWorkerServing) {
    {
        RawRpcClient c;
        ASSERT_TRUE(c.connect(w_.port()));
        ASSERT_TRUE(c.hello());
        uint64_t ptr = 0, size = 0;
        ASSERT_TRUE(c.alloc(0, 48 * kMiB, &ptr, &size));
        ASSERT_NE(ptr, 0u) << w_.log();
        // A SET_TENSOR that announces 32 MiB and sends 1 MiB before hanging up.
        ASSERT_TRUE(c.send_header(rpc_test::kRawSetTensor, 32 * kMiB));
        std::vector<uint8_t> part(kMiB, 0x5a);
        ASSERT_TRUE(c.send_bytes(part.data(), part.size()));
    }
    {
        RawRpcClient c;
        ASSERT_TRUE(c.connect(w_.port()));
        ASSERT_TRUE(c.hello()) << w_.log();
        uint64_t free = 0, total = 0;
        ASSERT_TRUE(c.device_memory(0, &free, &total));
        EXPECT_EQ(total, kLimitMiB * kMiB);
        uint64_t ptr = 0, size = 0;
        ASSERT_TRUE(c.alloc(0, 60 * kMiB, &ptr, &size));
        EXPECT_NE(ptr, 0u) << "the first client's 48 MiB must have come back\n" << w_.log();
        EXPECT_EQ(size, 60 * kMiB);
    }
    // ggml's own client after them.
    ggml_backend_dev_t dev = rpc_device(w_);
    ASSERT_NE(dev, nullptr);
    size_t free = 0, total = 0;
    ggml_backend_dev_memory(dev, &free, &total);
    EXPECT_EQ(total, kLimitMiB * kMiB);
    EXPECT_EQ(kill(w_.pid(), 0), 0) << "the worker is gone";
}

TEST_F(MemLimitedWorker, ClientOfAnotherProtocolVersionIsHungUpOn) {
    {
        RawRpcClient old;
        ASSERT_TRUE(old.connect(w_.port()));
        ASSERT_TRUE(old.send_header(rpc_test::kRawHello, 0));  // protocol 3's HELLO
        EXPECT_TRUE(old.hung_up(10000));
    }
    const std::string log = w_.log();
    EXPECT_NE(log.find("another ggml RPC protocol version"), std::string::npos) << log;
    RawRpcClient next;
    ASSERT_TRUE(next.connect(w_.port()));
    uint8_t major = 0;
    ASSERT_TRUE(next.hello(&major)) << w_.log();
    EXPECT_EQ(major, 8);
}

TEST(UnlimitedWorker, ReportsTheMachinesMemory) {
    Worker w;
    std::string error;
    ASSERT_TRUE(w.start(&error)) << error;
    ggml_backend_dev_t dev = rpc_device(w);
    ASSERT_NE(dev, nullptr);
    ggml_backend_dev_t cpu = ggdiff::find_device("CPU");
    ASSERT_NE(cpu, nullptr);
    size_t free = 0, total = 0, cpu_free = 0, cpu_total = 0;
    ggml_backend_dev_memory(dev, &free, &total);
    ggml_backend_dev_memory(cpu, &cpu_free, &cpu_total);
    // The worker serves this machine's CPU device: the same total as ours.
    EXPECT_EQ(total, cpu_total);
    EXPECT_GT(total, kLimitMiB * kMiB);
    EXPECT_GT(free, 0u);
    EXPECT_LE(free, total);
    EXPECT_EQ(w.log().find("--mem"), std::string::npos) << w.log();
}

}  // namespace
