// Seamless tiling's padding (nn::pad_wrap, and the padding nn::pad_conv_input takes from the
// graph's kernel choices) against small tensors padded by hand.
#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml.h>
#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "nn/layers.h"
#include "runtime/kernel_choices.h"

namespace {

ggml_backend_t cpu_backend() {
    static ggml_backend_t backend = [] {
        ggml_backend_load_all();
        return ggml_backend_init_by_type(GGML_BACKEND_DEVICE_TYPE_CPU, nullptr);
    }();
    return backend;
}

// Runs `build` on a [w, h, c, 1] f32 input holding `values`; returns the output and its shape.
std::vector<float> run(int64_t w, int64_t h, int64_t c, const std::vector<float>& values,
                       const std::function<ggml_tensor*(ggml_context*, ggml_tensor*)>& build,
                       std::vector<int64_t>* ne) {
    ggml_init_params p = {32 * ggml_tensor_overhead() + ggml_graph_overhead(), nullptr, true};
    ggml_context* ctx = ggml_init(p);
    ggml_tensor* x = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, w, h, c, 1);
    ggml_tensor* out = build(ctx, x);
    ggml_cgraph* gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, out);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx, cpu_backend());
    ggml_backend_tensor_set(x, values.data(), 0, ggml_nbytes(x));
    EXPECT_EQ(ggml_backend_graph_compute(cpu_backend(), gf), GGML_STATUS_SUCCESS);
    std::vector<float> result(static_cast<size_t>(ggml_nelements(out)));
    ggml_backend_tensor_get(out, result.data(), 0, ggml_nbytes(out));
    *ne = {out->ne[0], out->ne[1], out->ne[2], out->ne[3]};
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
    return result;
}

// A 3 x 2 image (rows of width 3):
//   1 2 3
//   4 5 6
const std::vector<float> kImage = {1, 2, 3, 4, 5, 6};

TEST(PadWrap, BothAxesTakeTheOtherSide) {
    std::vector<int64_t> ne;
    const auto out = run(
        3, 2, 1, kImage,
        [](ggml_context* ctx, ggml_tensor* x) {
            return ggdiff::nn::pad_wrap(ctx, x, 1, 1, 1, 1, true, true);
        },
        &ne);
    EXPECT_EQ(ne, (std::vector<int64_t>{5, 4, 1, 1}));
    // Row above = last row, row below = first row; column left = last column, right = first.
    EXPECT_EQ(out, (std::vector<float>{6, 4, 5, 6, 4,  //
                                       3, 1, 2, 3, 1,  //
                                       6, 4, 5, 6, 4,  //
                                       3, 1, 2, 3, 1}));
}

TEST(PadWrap, OneAxisWrapsTheOtherGetsZeros) {
    std::vector<int64_t> ne;
    const auto x_only = run(
        3, 2, 1, kImage,
        [](ggml_context* ctx, ggml_tensor* x) {
            return ggdiff::nn::pad_wrap(ctx, x, 1, 1, 1, 1, true, false);
        },
        &ne);
    EXPECT_EQ(ne, (std::vector<int64_t>{5, 4, 1, 1}));
    EXPECT_EQ(x_only, (std::vector<float>{0, 0, 0, 0, 0,  //
                                          3, 1, 2, 3, 1,  //
                                          6, 4, 5, 6, 4,  //
                                          0, 0, 0, 0, 0}));
    const auto y_only = run(
        3, 2, 1, kImage,
        [](ggml_context* ctx, ggml_tensor* x) {
            return ggdiff::nn::pad_wrap(ctx, x, 1, 1, 1, 1, false, true);
        },
        &ne);
    EXPECT_EQ(y_only, (std::vector<float>{0, 4, 5, 6, 0,  //
                                          0, 1, 2, 3, 0,  //
                                          0, 4, 5, 6, 0,  //
                                          0, 1, 2, 3, 0}));
}

TEST(PadWrap, DownsamplePadFollowsTheGraphsChoices) {
    // The VAE encoder's right/bottom pad: zeros by default, wrapped under seamless tiling, on
    // every channel.
    std::vector<float> two = kImage;
    for (float v : kImage) two.push_back(10 * v);
    std::vector<int64_t> ne;
    const auto plain = run(
        3, 2, 2, two,
        [](ggml_context* ctx, ggml_tensor* x) {
            return ggdiff::nn::pad_conv_input(ctx, x, 0, 1, 0, 1);
        },
        &ne);
    EXPECT_EQ(ne, (std::vector<int64_t>{4, 3, 2, 1}));
    EXPECT_EQ(plain, (std::vector<float>{1,  2,  3,  0, 4,  5,  6,  0, 0, 0, 0, 0,  //
                                         10, 20, 30, 0, 40, 50, 60, 0, 0, 0, 0, 0}));
    const auto wrapped = run(
        3, 2, 2, two,
        [](ggml_context* ctx, ggml_tensor* x) {
            ggdiff::KernelChoices k;
            k.circular_x = k.circular_y = true;
            ggdiff::KernelChoiceScope scope(ctx, k);
            return ggdiff::nn::pad_conv_input(ctx, x, 0, 1, 0, 1);
        },
        &ne);
    EXPECT_EQ(wrapped, (std::vector<float>{1,  2,  3,  1,  4,  5,  6,  4,  1,  2,  3,  1,  //
                                           10, 20, 30, 10, 40, 50, 60, 40, 10, 20, 30, 10}));
}

}  // namespace
