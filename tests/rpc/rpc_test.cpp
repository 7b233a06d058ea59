// Two ggdiff-rpc workers on free loopback ports: `ggdiff --list-devices` shows them as
// RPC0 and RPC1, a small graph computed on each matches the CPU device, and dead or
// foreign endpoints give errors that name them. Workers are stopped after every test.
//
// Under ctest every test runs in its own process. Run directly, the tests share one
// process, so the in-process RPC test comes after the CLI ones (ggml keeps RPC devices
// registered for the life of the process, and their workers stop after each test).
#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <sstream>

#include "devices/devices.h"
#include "rpc_test_util.h"

namespace {

using rpc_test::FakeServer;
using rpc_test::RunResult;
using rpc_test::Worker;

class RpcWorkers : public ::testing::Test {
  protected:
    void SetUp() override {
        std::string error;
        ASSERT_TRUE(w1_.start(&error)) << error;
        ASSERT_TRUE(w2_.start(&error)) << error;
    }
    void TearDown() override {
        w1_.stop();
        w2_.stop();
    }
    std::string servers() const { return w1_.endpoint() + "," + w2_.endpoint(); }
    Worker w1_, w2_;  // their destructors stop them too
};

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> out;
    std::stringstream ss(text);
    std::string line;
    while (std::getline(ss, line)) out.push_back(line);
    return out;
}

std::string ggdiff_cli() {
    return rpc_test::binary("ggdiff");
}

TEST_F(RpcWorkers, ListDevicesShowsRpc0AndRpc1) {
    ASSERT_TRUE(rpc_test::file_exists(ggdiff_cli())) << "build the ggdiff target";
    RunResult r = rpc_test::run({ggdiff_cli(), "--list-devices", "--rpc-servers", servers()});
    ASSERT_TRUE(r.finished) << "ggdiff --list-devices timed out";
    ASSERT_TRUE(r.exited && r.code == 0) << "code " << r.code << "\n" << r.err;
    bool cpu = false;
    std::string rpc0, rpc1;
    for (const std::string& line : lines_of(r.out)) {
        if (line.rfind("CPU\t", 0) == 0) cpu = true;
        if (line.rfind("RPC0\t", 0) == 0) rpc0 = line.substr(5);
        if (line.rfind("RPC1\t", 0) == 0) rpc1 = line.substr(5);
    }
    EXPECT_TRUE(cpu) << r.out;
    EXPECT_EQ(rpc0, w1_.endpoint()) << r.out;  // RPC<i> follows the --rpc-servers order
    EXPECT_EQ(rpc1, w2_.endpoint()) << r.out;
}

TEST_F(RpcWorkers, ListDevicesNamesTheDeadEndpoint) {
    const int dead = rpc_test::free_port();
    const std::string dead_ep = "127.0.0.1:" + std::to_string(dead);
    RunResult r = rpc_test::run(
        {ggdiff_cli(), "--list-devices", "--rpc-servers", w1_.endpoint() + "," + dead_ep});
    ASSERT_TRUE(r.finished);
    EXPECT_TRUE(r.exited) << "ggdiff died of signal " << r.code << "\n" << r.err;
    EXPECT_NE(r.code, 0);
    EXPECT_NE(r.err.find(dead_ep), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("cannot reach"), std::string::npos) << r.err;
}

TEST_F(RpcWorkers, ListDevicesRejectsAMalformedEndpoint) {
    RunResult r = rpc_test::run(
        {ggdiff_cli(), "--list-devices", "--rpc-servers", w1_.endpoint() + ",127.0.0.1:http"});
    ASSERT_TRUE(r.finished);
    EXPECT_TRUE(r.exited) << "ggdiff died of signal " << r.code << "\n" << r.err;
    EXPECT_NE(r.code, 0);
    EXPECT_NE(r.err.find("127.0.0.1:http"), std::string::npos) << r.err;
}

// ---- the same small graph on any device -------------------------------------------------

constexpr int K = 16, M = 8, N = 12;                           // matmul
constexpr int W = 10, H = 9, CI = 2, CO = 4, KW = 3, KH = 3;  // conv2d, stride 1, pad 1

struct Inputs {
    std::vector<float> a, b, bias, kernel, image;
    Inputs() {
        auto fill = [](std::vector<float>& v, size_t n, float scale, int seed) {
            v.resize(n);
            for (size_t i = 0; i < n; ++i) {
                v[i] = scale * std::sin(0.37f * static_cast<float>(i) + static_cast<float>(seed));
            }
        };
        fill(a, K * M, 0.5f, 1);
        fill(b, K * N, 0.7f, 2);
        fill(bias, M, 0.3f, 3);
        fill(kernel, KW * KH * CI * CO, 0.4f, 4);
        fill(image, W * H * CI, 1.0f, 5);
    }
};

struct Outputs {
    std::vector<float> softmax;  // softmax(a^T b + bias) per column: [M, N]
    std::vector<float> conv;     // conv2d(kernel, image): [W, H, CO]
};

// softmax(matmul + add) and conv2d computed naively in double precision.
Outputs reference(const Inputs& in) {
    Outputs o;
    o.softmax.resize(M * N);
    for (int n = 0; n < N; ++n) {
        double row[M], mx = -1e300, sum = 0;
        for (int m = 0; m < M; ++m) {
            double s = in.bias[m];
            for (int k = 0; k < K; ++k) s += double(in.a[m * K + k]) * in.b[n * K + k];
            row[m] = s;
            mx = std::max(mx, s);
        }
        for (int m = 0; m < M; ++m) sum += std::exp(row[m] - mx);
        for (int m = 0; m < M; ++m) o.softmax[n * M + m] = float(std::exp(row[m] - mx) / sum);
    }
    o.conv.assign(W * H * CO, 0.f);
    for (int co = 0; co < CO; ++co)
        for (int y = 0; y < H; ++y)
            for (int x = 0; x < W; ++x) {
                double s = 0;
                for (int ci = 0; ci < CI; ++ci)
                    for (int ky = 0; ky < KH; ++ky)
                        for (int kx = 0; kx < KW; ++kx) {
                            int ix = x + kx - 1, iy = y + ky - 1;
                            if (ix < 0 || iy < 0 || ix >= W || iy >= H) continue;
                            s += double(in.kernel[((co * CI + ci) * KH + ky) * KW + kx]) *
                                 in.image[(ci * H + iy) * W + ix];
                        }
                o.conv[(co * H + y) * W + x] = float(s);
            }
    return o;
}

// Builds the graph in a no-alloc context, allocates every tensor on the device's own
// buffer type, uploads the inputs, computes and downloads both outputs.
Outputs compute_on(ggml_backend_dev_t dev, const Inputs& in, std::string* error) {
    Outputs out;
    ggml_backend_t backend = ggml_backend_dev_init(dev, nullptr);
    if (!backend) {
        *error = std::string("cannot init ") + ggml_backend_dev_name(dev);
        return out;
    }
    ggdiff::set_backend_threads(backend, 2);
    ggml_init_params params{ggml_tensor_overhead() * 64 + ggml_graph_overhead(), nullptr, true};
    ggml_context* ctx = ggml_init(params);
    ggml_tensor* a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, K, M);
    ggml_tensor* b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, K, N);
    ggml_tensor* bias = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, M);
    ggml_tensor* kernel = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, KW, KH, CI, CO);
    ggml_tensor* image = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, W, H, CI, 1);
    ggml_tensor* sm = ggml_soft_max(ctx, ggml_add(ctx, ggml_mul_mat(ctx, a, b), bias));
    ggml_tensor* conv = ggml_conv_2d(ctx, kernel, image, 1, 1, 1, 1, 1, 1);
    ggml_set_output(sm);
    ggml_set_output(conv);
    ggml_cgraph* gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, sm);
    ggml_build_forward_expand(gf, conv);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx, backend);
    if (!buf) {
        *error = std::string("cannot allocate on ") + ggml_backend_dev_name(dev);
    } else {
        ggml_backend_tensor_set(a, in.a.data(), 0, ggml_nbytes(a));
        ggml_backend_tensor_set(b, in.b.data(), 0, ggml_nbytes(b));
        ggml_backend_tensor_set(bias, in.bias.data(), 0, ggml_nbytes(bias));
        ggml_backend_tensor_set(kernel, in.kernel.data(), 0, ggml_nbytes(kernel));
        ggml_backend_tensor_set(image, in.image.data(), 0, ggml_nbytes(image));
        if (ggml_backend_graph_compute(backend, gf) != GGML_STATUS_SUCCESS) {
            *error = std::string("graph_compute failed on ") + ggml_backend_dev_name(dev);
        } else if (ggml_nelements(sm) != M * N || ggml_nelements(conv) != W * H * CO) {
            *error = "unexpected output shapes";
        } else {
            out.softmax.resize(M * N);
            out.conv.resize(W * H * CO);
            ggml_backend_tensor_get(sm, out.softmax.data(), 0, ggml_nbytes(sm));
            ggml_backend_tensor_get(conv, out.conv.data(), 0, ggml_nbytes(conv));
        }
        ggml_backend_buffer_free(buf);
    }
    ggml_free(ctx);
    ggml_backend_free(backend);
    return out;
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, double rel,
                  double abs_floor, const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    int bad = 0;
    for (size_t i = 0; i < got.size(); ++i) {
        const double tol = std::max(abs_floor, rel * std::fabs(want[i]));
        if (!(std::fabs(double(got[i]) - want[i]) <= tol) && bad++ < 5) {
            ADD_FAILURE() << what << "[" << i << "]: " << got[i] << " vs " << want[i];
        }
    }
    EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << got.size() << " values differ";
}

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

TEST_F(RpcWorkers, GraphOnEachRpcDeviceMatchesCpu) {
    ggdiff::load_backends();
    int rpc_before = 0;  // RPC devices an earlier test of this process registered
    for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
        if (std::string(ggml_backend_dev_name(ggml_backend_dev_get(i))).rfind("RPC", 0) == 0) {
            ++rpc_before;
        }
    }
    std::vector<std::string> added;
    ggdiff::Status st = ggdiff::add_rpc_servers(servers(), &added);
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_EQ(added.size(), 2u);
    EXPECT_EQ(added[0], "RPC" + std::to_string(rpc_before));
    EXPECT_EQ(added[1], "RPC" + std::to_string(rpc_before + 1));
    // Adding the same servers again is a no-op.
    std::vector<std::string> again;
    st = ggdiff::add_rpc_servers(servers(), &again);
    EXPECT_TRUE(st.ok()) << st.message();
    EXPECT_TRUE(again.empty());

    const Inputs in;
    const Outputs want = reference(in);
    ggml_backend_dev_t cpu = ggdiff::find_device("CPU");
    ASSERT_NE(cpu, nullptr);
    std::string error;
    const Outputs on_cpu = compute_on(cpu, in, &error);
    ASSERT_TRUE(error.empty()) << error;
    expect_close(on_cpu.softmax, want.softmax, 1e-4, 1e-6, "CPU softmax vs reference");
    // ggml's conv_2d goes through im2col, which may round through F16: a sanity bound.
    expect_close(on_cpu.conv, want.conv, 3e-3, 3e-3, "CPU conv2d vs reference");

    const std::string endpoints[2] = {w1_.endpoint(), w2_.endpoint()};
    for (int i = 0; i < 2; ++i) {
        SCOPED_TRACE(added[i]);
        ggml_backend_dev_t dev = ggdiff::find_device(added[i]);
        ASSERT_NE(dev, nullptr);
        EXPECT_EQ(ggdiff::find_device(lower(added[i])), dev);
        EXPECT_EQ(std::string(ggml_backend_dev_description(dev)), endpoints[i]);
        size_t free = 0, total = 0;
        ggml_backend_dev_memory(dev, &free, &total);
        EXPECT_GT(total, 0u);  // the worker reports its host's memory
        const Outputs on_rpc = compute_on(dev, in, &error);
        ASSERT_TRUE(error.empty()) << error;
        expect_close(on_rpc.softmax, on_cpu.softmax, 1e-5, 1e-7, added[i] + " softmax vs CPU");
        expect_close(on_rpc.conv, on_cpu.conv, 1e-5, 1e-6, added[i] + " conv2d vs CPU");
    }
    bool listed[2] = {false, false};
    for (const ggdiff::DeviceInfo& d : ggdiff::list_devices()) {
        for (int i = 0; i < 2; ++i) listed[i] = listed[i] || d.name == added[i];
    }
    EXPECT_TRUE(listed[0] && listed[1]);
}

// ---- endpoints that are not (working) RPC servers, in this process ---------------------

TEST(RpcEndpoints, UnreachableEndpointIsAnErrorNamingIt) {
    const std::string ep = "127.0.0.1:" + std::to_string(rpc_test::free_port());
    ggdiff::Status st = ggdiff::add_rpc_servers(ep);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.message().find(ep), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("cannot reach"), std::string::npos) << st.message();
}

TEST(RpcEndpoints, MalformedEndpointIsAnErrorNamingIt) {
    for (const char* bad : {"127.0.0.1", "127.0.0.1:0", "127.0.0.1:65536", ":80", "[::1]:80"}) {
        ggdiff::Status st = ggdiff::add_rpc_servers(bad);
        ASSERT_FALSE(st.ok()) << bad;
        EXPECT_NE(st.message().find(bad), std::string::npos) << st.message();
    }
}

TEST(RpcEndpoints, ServerThatHangsUpFailsTheHandshakeWithoutCrashing) {
    FakeServer fake(FakeServer::Mode::CloseAtOnce);
    ASSERT_GT(fake.port(), 0);
    ggdiff::Status st = ggdiff::add_rpc_servers(fake.endpoint());
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.message().find(fake.endpoint()), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("handshake"), std::string::npos) << st.message();
}

TEST(RpcEndpoints, SilentServerTimesOut) {
    FakeServer fake(FakeServer::Mode::Silent);
    ASSERT_GT(fake.port(), 0);
    ggdiff::RpcConnectOptions options;
    options.handshake_timeout_ms = 1500;
    ggdiff::Status st = ggdiff::add_rpc_servers(fake.endpoint(), nullptr, options);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.message().find(fake.endpoint()), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("did not answer"), std::string::npos) << st.message();
    EXPECT_EQ(ggdiff::pending_rpc_handshakes(), 1);
    // Hanging up ends the abandoned handshake (as an error, not an abort).
    fake.stop();
    for (int i = 0; i < 200 && ggdiff::pending_rpc_handshakes() > 0; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_EQ(ggdiff::pending_rpc_handshakes(), 0);
}

}  // namespace
