// The CPU kernels (runtime/cpu_kernels.h) against plain double-precision loops: matrix
// products with broadcasts and strided rows, direct and Winograd convolutions over the
// shapes that pick each code path, attention with and without a causal mask, and the
// graph rewrite that swaps ggml_mul_mat for the kernel.
#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "runtime/cpu_kernels.h"
#include "runtime/cpu_kernels_impl.h"

namespace {

using ggdiff::cpu::kernels_available;

ggml_backend_t cpu_backend() {
    static ggml_backend_t backend = [] {
        ggml_backend_load_all();
        ggml_backend_t b = ggml_backend_init_by_type(GGML_BACKEND_DEVICE_TYPE_CPU, nullptr);
        ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(ggml_backend_get_device(b));
        auto set_threads = reinterpret_cast<ggml_backend_set_n_threads_t>(
            ggml_backend_reg_get_proc_address(reg, "ggml_backend_set_n_threads"));
        if (set_threads) set_threads(b, 2);
        return b;
    }();
    return backend;
}

std::vector<float> random_values(size_t n, uint32_t seed) {
    std::mt19937 gen(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v) x = dist(gen);
    return v;
}

// Builds a graph in a fresh context from `inputs` (shapes), computes it on the CPU
// backend and returns the output.
struct Graph {
    std::vector<std::vector<int64_t>> shapes;
    std::function<ggml_tensor*(ggml_context*, std::vector<ggml_tensor*>&)> build;

    std::vector<float> run(const std::vector<std::vector<float>>& data,
                           std::vector<int64_t>* ne = nullptr) const {
        ggml_init_params p = {64 * ggml_tensor_overhead() + ggml_graph_overhead(), nullptr, true};
        ggml_context* ctx = ggml_init(p);
        std::vector<ggml_tensor*> in;
        for (const auto& s : shapes) {
            int64_t d[4] = {1, 1, 1, 1};
            for (size_t i = 0; i < s.size(); ++i) d[i] = s[i];
            in.push_back(ggml_new_tensor_4d(ctx, GGML_TYPE_F32, d[0], d[1], d[2], d[3]));
        }
        ggml_tensor* out = build(ctx, in);
        ggml_cgraph* gf = ggml_new_graph(ctx);
        ggml_build_forward_expand(gf, out);
        for (ggml_tensor* t : in) ggml_set_input(t);
        ggml_set_output(out);
        // Graph allocation, as the runner's scheduler does (a rewritten graph leaves
        // unused tensors in the context).
        ggml_gallocr_t galloc =
            ggml_gallocr_new(ggml_backend_get_default_buffer_type(cpu_backend()));
        EXPECT_TRUE(ggml_gallocr_alloc_graph(galloc, gf));
        for (size_t i = 0; i < in.size(); ++i)
            ggml_backend_tensor_set(in[i], data[i].data(), 0, ggml_nbytes(in[i]));
        EXPECT_EQ(ggml_backend_graph_compute(cpu_backend(), gf), GGML_STATUS_SUCCESS);
        std::vector<float> result(static_cast<size_t>(ggml_nelements(out)));
        ggml_backend_tensor_get(out, result.data(), 0, ggml_nbytes(out));
        if (ne) ne->assign(out->ne, out->ne + 4);
        ggml_gallocr_free(galloc);
        ggml_free(ctx);
        return result;
    }
};

// Largest difference relative to the largest reference magnitude.
double rel_error(const std::vector<float>& got, const std::vector<double>& ref) {
    EXPECT_EQ(got.size(), ref.size());
    double worst = 0.0, scale = 1e-30;
    for (size_t i = 0; i < ref.size() && i < got.size(); ++i) {
        worst = std::max(worst, std::fabs(got[i] - ref[i]));
        scale = std::max(scale, std::fabs(ref[i]));
    }
    return worst / scale;
}

class CpuKernels : public ::testing::Test {
  protected:
    void SetUp() override {
        if (!kernels_available()) GTEST_SKIP() << "no OpenBLAS: the CPU kernels are off";
    }
};

// --- products --------------------------------------------------------------------------

// ggml_mul_mat semantics: out[n][m] = sum_k a[m][k] b[n][k], a broadcast over outer dims.
std::vector<double> mul_mat_ref(const std::vector<float>& a, const std::vector<float>& b, int64_t k,
                                int64_t m, int64_t n, int64_t a2, int64_t b2) {
    std::vector<double> out(static_cast<size_t>(m * n * b2));
    for (int64_t i2 = 0; i2 < b2; ++i2) {
        const int64_t j2 = i2 / (b2 / a2);
        for (int64_t in = 0; in < n; ++in)
            for (int64_t im = 0; im < m; ++im) {
                double s = 0.0;
                for (int64_t ik = 0; ik < k; ++ik)
                    s += static_cast<double>(a[(j2 * m + im) * k + ik]) * b[(i2 * n + in) * k + ik];
                out[(i2 * n + in) * m + im] = s;
            }
    }
    return out;
}

TEST_F(CpuKernels, MulMatMatchesReference) {
    struct Case {
        int64_t k, m, n, a2, b2;
    };
    for (const Case& c : std::vector<Case>{{64, 96, 77, 1, 1},
                                           {40, 3, 200, 1, 1},
                                           {33, 130, 5, 1, 2},
                                           {16, 20, 24, 4, 8},
                                           {128, 1, 1, 1, 1}}) {
        const auto a = random_values(static_cast<size_t>(c.k * c.m * c.a2), 1);
        const auto b = random_values(static_cast<size_t>(c.k * c.n * c.b2), 2);
        Graph g{{{c.k, c.m, c.a2}, {c.k, c.n, c.b2}},
                [](ggml_context* ctx, std::vector<ggml_tensor*>& in) {
                    return ggdiff::cpu::mul_mat(ctx, in[0], in[1]);
                }};
        std::vector<int64_t> ne;
        const auto got = g.run({a, b}, &ne);
        EXPECT_EQ(ne, (std::vector<int64_t>{c.m, c.n, c.b2, 1}));
        EXPECT_LT(rel_error(got, mul_mat_ref(a, b, c.k, c.m, c.n, c.a2, c.b2)), 1e-5)
            << c.k << "x" << c.m << "x" << c.n << " batch " << c.a2 << "/" << c.b2;
    }
}

TEST_F(CpuKernels, MulMatWidensF16Matrices) {
    // Long enough matrices to take several widened blocks; a broadcast batch too.
    struct Case {
        int64_t k, m, n, b2;
    };
    for (const Case& c : std::vector<Case>{{320, 1300, 40, 1}, {64, 40, 9, 2}, {48, 3, 100, 1}}) {
        auto a = random_values(static_cast<size_t>(c.k * c.m), 13);
        const auto b = random_values(static_cast<size_t>(c.k * c.n * c.b2), 14);
        Graph g{{{c.k, c.m}, {c.k, c.n, c.b2}},
                [](ggml_context* ctx, std::vector<ggml_tensor*>& in) {
                    ggml_tensor* half = ggml_cast(ctx, in[0], GGML_TYPE_F16);
                    EXPECT_TRUE(ggdiff::cpu::can_mul_mat(half, in[1]));
                    return ggdiff::cpu::mul_mat(ctx, half, in[1]);
                }};
        const auto got = g.run({a, b});
        for (float& x : a) x = ggml_fp16_to_fp32(ggml_fp32_to_fp16(x));
        EXPECT_LT(rel_error(got, mul_mat_ref(a, b, c.k, c.m, c.n, 1, c.b2)), 1e-5)
            << c.k << "x" << c.m << "x" << c.n;
    }
}

// Widening f16 rows (vectorized where the CPU allows) gives exactly ggml's conversion, for
// every length (whole vectors and tails) and every kind of value (subnormals, infinities, NaN).
TEST(CpuWiden, F16RowsWidenExactly) {
    std::vector<uint16_t> bits;
    for (uint32_t v = 0; v < 65536; v += 7) bits.push_back(static_cast<uint16_t>(v));
    for (uint16_t special : {0x0000, 0x8000, 0x0001, 0x03ff, 0x7c00, 0xfc00, 0x7e00, 0x7bff}) {
        bits.push_back(special);
    }
    for (int64_t n : {1, 7, 8, 9, 15, 16, 17, 31, 33, 100, static_cast<int>(bits.size())}) {
        std::vector<float> got(static_cast<size_t>(n) + 1, -1.0f);
        ggdiff::cpu::widen_row(GGML_TYPE_F16, bits.data(), got.data(), n);
        for (int64_t i = 0; i < n; ++i) {
            const float want = ggml_fp16_to_fp32(bits[static_cast<size_t>(i)]);
            if (std::isnan(want)) {  // the hardware quiets signalling NaNs
                ASSERT_TRUE(std::isnan(got[static_cast<size_t>(i)])) << "n " << n << " value " << i;
                continue;
            }
            uint32_t a, b;
            std::memcpy(&a, &got[static_cast<size_t>(i)], 4);
            std::memcpy(&b, &want, 4);
            ASSERT_EQ(a, b) << "n " << n << " value " << i << " bits 0x" << std::hex
                            << bits[static_cast<size_t>(i)];
        }
        EXPECT_EQ(got[static_cast<size_t>(n)], -1.0f) << "wrote past the row, n " << n;
    }
}

TEST_F(CpuKernels, MulMatTakesRowViews) {
    // The GEGLU halves: rows [rows, 2 * rows) of a weight as a view with the parent's stride.
    const int64_t k = 48, rows = 40, n = 70;
    const auto w = random_values(static_cast<size_t>(k * 2 * rows), 3);
    const auto x = random_values(static_cast<size_t>(k * n), 4);
    Graph g{{{k, 2 * rows}, {k, n}}, [&](ggml_context* ctx, std::vector<ggml_tensor*>& in) {
                ggml_tensor* half =
                    ggml_view_2d(ctx, in[0], k, rows, in[0]->nb[1], rows * in[0]->nb[1]);
                EXPECT_TRUE(ggdiff::cpu::can_mul_mat(half, in[1]));
                return ggdiff::cpu::mul_mat(ctx, half, in[1]);
            }};
    const std::vector<float> upper(w.begin() + k * rows, w.end());
    EXPECT_LT(rel_error(g.run({w, x}), mul_mat_ref(upper, x, k, rows, n, 1, 1)), 1e-5);
}

TEST_F(CpuKernels, RewriteReplacesMulMatsAndKeepsTheirUsers) {
    const int64_t k = 32, m = 24, n = 18;
    const auto a = random_values(static_cast<size_t>(k * m), 5);
    const auto b = random_values(static_cast<size_t>(k * n), 6);
    auto build = [&](bool rewrite) {
        return Graph{{{k, m}, {k, n}}, [=](ggml_context* ctx, std::vector<ggml_tensor*>& in) {
                         ggml_tensor* p = ggml_mul_mat(ctx, in[0], in[1]);  // [m, n]
                         // A view of the product, and a second product that uses both.
                         ggml_tensor* v = ggml_view_2d(ctx, p, m, n / 2, p->nb[1], 0);
                         // ggml_cast lists its result among its own sources.
                         ggml_tensor* q = ggml_mul_mat(
                             ctx, p, ggml_cast(ctx, ggml_scale(ctx, v, 0.5f), GGML_TYPE_F32));
                         std::vector<ggml_tensor*> outs{ggml_add(ctx, q, ggml_sum(ctx, v))};
                         if (rewrite) {
                             ggdiff::cpu::accelerate_mul_mats(ctx, outs);
                             EXPECT_EQ(outs[0]->src[0]->op, GGML_OP_CUSTOM);
                             EXPECT_EQ(outs[0]->src[1]->src[0]->view_src->op, GGML_OP_CUSTOM);
                         }
                         return outs[0];
                     }};
    };
    const auto plain = build(false).run({a, b});
    const auto fast = build(true).run({a, b});
    ASSERT_EQ(plain.size(), fast.size());
    for (size_t i = 0; i < plain.size(); ++i)
        EXPECT_NEAR(plain[i], fast[i], 1e-4 * std::fabs(plain[i]) + 1e-4);
}

// A product named cpu::kGgmlOnlyProduct stays ggml's through the rewrite (the others do not):
// nn::attention's ggml_only products (tests/nn/attention_ggml_only_test.cpp).
TEST_F(CpuKernels, GgmlOnlyProductsStayGgmls) {
    const int64_t k = 32, m = 24, n = 18;
    const auto a = random_values(static_cast<size_t>(k * m), 7);
    const auto b = random_values(static_cast<size_t>(k * n), 8);
    auto build = [&](bool rewrite) {
        return Graph{{{k, m}, {k, n}}, [=](ggml_context* ctx, std::vector<ggml_tensor*>& in) {
                         ggml_tensor* kept = ggml_mul_mat(ctx, in[0], in[1]);
                         ggml_set_name(kept, ggdiff::cpu::kGgmlOnlyProduct);
                         ggml_tensor* fast = ggml_mul_mat(ctx, in[0], in[1]);
                         std::vector<ggml_tensor*> outs{ggml_sub(ctx, kept, fast)};
                         if (rewrite) {
                             ggdiff::cpu::accelerate_mul_mats(ctx, outs);
                             EXPECT_EQ(outs[0]->src[0]->op, GGML_OP_MUL_MAT);
                             EXPECT_EQ(outs[0]->src[1]->op, GGML_OP_CUSTOM);
                         }
                         return outs[0];
                     }};
    };
    for (float d : build(true).run({a, b})) EXPECT_NEAR(d, 0.0f, 1e-4f);
}

// --- convolutions ------------------------------------------------------------------

struct ConvCase {
    int64_t w, h, c, oc, n, k;
    int stride, pad;
    bool bias;
};

std::vector<double> conv_ref(const ConvCase& c, const std::vector<float>& x,
                             const std::vector<float>& w, const std::vector<float>& b) {
    const int64_t ow = (c.w + 2 * c.pad - c.k) / c.stride + 1;
    const int64_t oh = (c.h + 2 * c.pad - c.k) / c.stride + 1;
    std::vector<double> out(static_cast<size_t>(ow * oh * c.oc * c.n));
    for (int64_t n = 0; n < c.n; ++n)
        for (int64_t o = 0; o < c.oc; ++o)
            for (int64_t oy = 0; oy < oh; ++oy)
                for (int64_t ox = 0; ox < ow; ++ox) {
                    double s = c.bias ? b[o] : 0.0;
                    for (int64_t ci = 0; ci < c.c; ++ci)
                        for (int64_t ky = 0; ky < c.k; ++ky)
                            for (int64_t kx = 0; kx < c.k; ++kx) {
                                const int64_t iy = oy * c.stride - c.pad + ky;
                                const int64_t ix = ox * c.stride - c.pad + kx;
                                if (iy < 0 || iy >= c.h || ix < 0 || ix >= c.w) continue;
                                s +=
                                    static_cast<double>(w[((o * c.c + ci) * c.k + ky) * c.k + kx]) *
                                    x[((n * c.c + ci) * c.h + iy) * c.w + ix];
                            }
                    out[((n * c.oc + o) * oh + oy) * ow + ox] = s;
                }
    return out;
}

// The kernel is cast to `wtype` in the graph (f16 and bf16 kernels are read as stored and
// widened by the convolution); the reference uses the rounded values.
void check_conv(const ConvCase& c, double tol, ggml_type wtype = GGML_TYPE_F32) {
    const auto x = random_values(static_cast<size_t>(c.w * c.h * c.c * c.n), 7);
    auto w = random_values(static_cast<size_t>(c.k * c.k * c.c * c.oc), 8);
    const auto b = random_values(static_cast<size_t>(c.oc), 9);
    std::vector<std::vector<int64_t>> shapes{{c.k, c.k, c.c, c.oc}, {c.w, c.h, c.c, c.n}};
    std::vector<std::vector<float>> data{w, x};
    if (c.bias) {
        shapes.push_back({c.oc});
        data.push_back(b);
    }
    Graph g{shapes, [&](ggml_context* ctx, std::vector<ggml_tensor*>& in) {
                ggml_tensor* kernel = wtype == GGML_TYPE_F32 ? in[0] : ggml_cast(ctx, in[0], wtype);
                EXPECT_TRUE(ggdiff::cpu::can_conv2d(kernel, in[1], c.bias ? in[2] : nullptr));
                return ggdiff::cpu::conv2d(ctx, kernel, in[1], c.bias ? in[2] : nullptr, c.stride,
                                           c.pad);
            }};
    std::vector<int64_t> ne;
    const auto got = g.run(data, &ne);
    for (float& v : w) {
        if (wtype == GGML_TYPE_F16) v = ggml_fp16_to_fp32(ggml_fp32_to_fp16(v));
        if (wtype == GGML_TYPE_BF16) v = ggml_bf16_to_fp32(ggml_fp32_to_bf16(v));
    }
    const int64_t ow = (c.w + 2 * c.pad - c.k) / c.stride + 1;
    const int64_t oh = (c.h + 2 * c.pad - c.k) / c.stride + 1;
    EXPECT_EQ(ne, (std::vector<int64_t>{ow, oh, c.oc, c.n}));
    EXPECT_LT(rel_error(got, conv_ref(c, x, w, b)), tol)
        << c.w << "x" << c.h << " " << c.c << "->" << c.oc << " n" << c.n << " k" << c.k << " s"
        << c.stride << " p" << c.pad;
}

TEST_F(CpuKernels, DirectConvolutionMatchesReference) {
    for (const ConvCase& c : std::vector<ConvCase>{
             {9, 7, 5, 19, 1, 3, 1, 1, true},      // small: output channels shared out
             {6, 6, 8, 40, 2, 3, 1, 1, true},      // small batch: one product for all images
             {20, 16, 6, 17, 1, 3, 1, 1, false},   // bands of rows per thread
             {40, 20, 6, 17, 1, 5, 1, 2, true},    // 5x5, bands of rows
             {17, 15, 6, 10, 2, 3, 2, 0, true},    // stride 2 (a downsampler)
             {21, 19, 12, 8, 2, 1, 1, 0, true},    // 1x1
             {5, 4, 12, 8, 3, 1, 1, 0, false},     // 1x1, small batch
             {12, 10, 3, 4, 1, 5, 1, 2, true}}) {  // 5x5
        check_conv(c, 1e-5);
    }
}

TEST_F(CpuKernels, WinogradConvolutionMatchesReference) {
    // 3x3 stride 1 with enough 4x4 tiles takes the Winograd path: odd sizes leave partial
    // tiles at the right and bottom edges; pad 0 and 1; several bands; one image and two.
    for (const ConvCase& c : std::vector<ConvCase>{{24, 24, 16, 24, 1, 3, 1, 1, true},
                                                   {30, 27, 9, 20, 2, 3, 1, 1, true},
                                                   {26, 23, 17, 8, 1, 3, 1, 0, false},
                                                   {70, 66, 8, 16, 1, 3, 1, 1, true}}) {
        check_conv(c, 2e-5);
    }
}

TEST_F(CpuKernels, ConvolutionsReadF16AndBf16KernelsAsStored) {
    // Each path: output channels shared out, one product for a small batch, bands of rows,
    // 1x1, Winograd; and more output channels than one widened block holds.
    for (ggml_type t : {GGML_TYPE_F16, GGML_TYPE_BF16}) {
        SCOPED_TRACE(ggml_type_name(t));
        for (const ConvCase& c : std::vector<ConvCase>{{9, 7, 5, 19, 1, 3, 1, 1, true},
                                                       {6, 6, 8, 40, 2, 3, 1, 1, true},
                                                       {20, 16, 6, 17, 1, 3, 1, 1, false},
                                                       {21, 19, 12, 8, 2, 1, 1, 0, true},
                                                       {30, 27, 9, 20, 2, 3, 1, 1, true},
                                                       {6, 6, 300, 1600, 1, 3, 1, 1, true}}) {
            check_conv(c, 2e-5, t);
        }
    }
    // Quantized kernels are not convolution kernels (the weight store keeps those float).
    ggml_init_params p = {4 * ggml_tensor_overhead(), nullptr, true};
    ggml_context* ctx = ggml_init(p);
    ggml_tensor* q = ggml_new_tensor_4d(ctx, GGML_TYPE_Q8_0, 32, 1, 4, 8);
    ggml_tensor* x = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 8, 8, 4, 1);
    EXPECT_FALSE(ggdiff::cpu::can_conv2d(q, x, nullptr));
    ggml_free(ctx);
}

TEST_F(CpuKernels, QuantizedMatricesStayOnGgmlsProduct) {
    // ggml rounds the activations of a quantized product to q8 blocks; the reference engine
    // does too, so the kernels leave those products alone.
    ggml_init_params p = {4 * ggml_tensor_overhead(), nullptr, true};
    ggml_context* ctx = ggml_init(p);
    ggml_tensor* x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 64, 8);
    for (ggml_type t : {GGML_TYPE_Q4_0, GGML_TYPE_Q8_0}) {
        ggml_tensor* w = ggml_new_tensor_2d(ctx, t, 64, 16);
        EXPECT_FALSE(ggdiff::cpu::can_mul_mat(w, x)) << ggml_type_name(t);
    }
    EXPECT_TRUE(ggdiff::cpu::can_mul_mat(ggml_new_tensor_2d(ctx, GGML_TYPE_F16, 64, 16), x));
    ggml_free(ctx);
}

TEST_F(CpuKernels, MulMatWidensBf16Matrices) {
    auto a = random_values(320 * 300, 15);
    const auto b = random_values(320 * 20, 16);
    Graph g{{{320, 300}, {320, 20}}, [](ggml_context* ctx, std::vector<ggml_tensor*>& in) {
                ggml_tensor* narrow = ggml_cast(ctx, in[0], GGML_TYPE_BF16);
                EXPECT_TRUE(ggdiff::cpu::can_mul_mat(narrow, in[1]));
                return ggdiff::cpu::mul_mat(ctx, narrow, in[1]);
            }};
    const auto got = g.run({a, b});
    for (float& x : a) x = ggml_bf16_to_fp32(ggml_fp32_to_bf16(x));
    EXPECT_LT(rel_error(got, mul_mat_ref(a, b, 320, 300, 20, 1, 1)), 1e-5);
}

// --- attention ---------------------------------------------------------------------

std::vector<double> attention_ref(const std::vector<float>& q, const std::vector<float>& k,
                                  const std::vector<float>& v, int64_t dim, int64_t tq, int64_t tk,
                                  int64_t n, int64_t heads, bool causal) {
    const int64_t d = dim / heads;
    std::vector<double> out(static_cast<size_t>(dim * tq * n));
    for (int64_t b = 0; b < n; ++b)
        for (int64_t h = 0; h < heads; ++h)
            for (int64_t i = 0; i < tq; ++i) {
                std::vector<double> s(static_cast<size_t>(tk), -INFINITY);
                double mx = -INFINITY;
                for (int64_t j = 0; j < tk && (!causal || j <= i); ++j) {
                    double dot = 0.0;
                    for (int64_t e = 0; e < d; ++e)
                        dot += static_cast<double>(q[(b * tq + i) * dim + h * d + e]) *
                               k[(b * tk + j) * dim + h * d + e];
                    s[j] = dot / std::sqrt(static_cast<double>(d));
                    mx = std::max(mx, s[j]);
                }
                double sum = 0.0;
                for (double& x : s) sum += (x = std::exp(x - mx));
                for (int64_t e = 0; e < d; ++e) {
                    double acc = 0.0;
                    for (int64_t j = 0; j < tk; ++j)
                        acc += s[j] / sum * v[(b * tk + j) * dim + h * d + e];
                    out[(b * tq + i) * dim + h * d + e] = acc;
                }
            }
    return out;
}

TEST_F(CpuKernels, AttentionMatchesReference) {
    struct Case {
        int64_t dim, tq, tk, n, heads;
        bool causal;
    };
    for (const Case& c : std::vector<Case>{{64, 77, 77, 1, 4, true},
                                           {40, 300, 77, 2, 5, false},
                                           {32, 200, 200, 1, 1, false},
                                           {24, 150, 150, 2, 3, true}}) {
        const auto q = random_values(static_cast<size_t>(c.dim * c.tq * c.n), 10);
        const auto k = random_values(static_cast<size_t>(c.dim * c.tk * c.n), 11);
        const auto v = random_values(static_cast<size_t>(c.dim * c.tk * c.n), 12);
        Graph g{{{c.dim, c.tq, c.n}, {c.dim, c.tk, c.n}, {c.dim, c.tk, c.n}},
                [&](ggml_context* ctx, std::vector<ggml_tensor*>& in) {
                    // Scaled up so that the softmax is far from uniform.
                    return ggdiff::cpu::attention(ctx, ggml_scale(ctx, in[0], 4.0f), in[1], in[2],
                                                  static_cast<int>(c.heads), c.causal);
                }};
        std::vector<float> q4(q);
        for (float& x : q4) x *= 4.0f;
        EXPECT_LT(rel_error(g.run({q, k, v}),
                            attention_ref(q4, k, v, c.dim, c.tq, c.tk, c.n, c.heads, c.causal)),
                  1e-5)
            << c.dim << " " << c.tq << "x" << c.tk << " heads " << c.heads;
    }
}

}  // namespace
