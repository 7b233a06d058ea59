// nn::attention(..., ggml_only): ggml's own products and softmax even under the CPU kernels
// (no fused attention op; both products named cpu::kGgmlOnlyProduct so that the kernels'
// rewrite leaves them to ggml), as LTX-2's Gemma 3 needs to follow the reference engine.
#include <ggml.h>
#include <gtest/gtest.h>

#include <cstring>
#include <utility>

#include "nn/layers.h"
#include "runtime/cpu_kernels.h"

namespace {

// (fused attention ops, products kept for ggml) in the graph of `out`.
std::pair<int, int> ops(ggml_context* ctx, ggml_tensor* out) {
    ggml_cgraph* g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, out);
    int custom = 0, kept = 0;
    for (int i = 0; i < ggml_graph_n_nodes(g); ++i) {
        const ggml_tensor* t = ggml_graph_node(g, i);
        custom += t->op == GGML_OP_CUSTOM;
        kept +=
            t->op == GGML_OP_MUL_MAT && std::strcmp(t->name, ggdiff::cpu::kGgmlOnlyProduct) == 0;
    }
    return {custom, kept};
}

TEST(AttentionGgmlOnly, NoFusedKernelAndKeptProducts) {
    if (!ggdiff::cpu::kernels_available()) GTEST_SKIP() << "no OpenBLAS: the CPU kernels are off";
    ggml_init_params params{256 * ggml_tensor_overhead() + 4 * ggml_graph_overhead(), nullptr,
                            true};
    ggml_context* ctx = ggml_init(params);
    ASSERT_NE(ctx, nullptr);
    {
        ggdiff::cpu::KernelScope scope(ctx);
        ggml_tensor* q = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 64, 12, 1);
        ggml_tensor* k = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 64, 12, 1);
        ggml_tensor* v = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 64, 12, 1);
        EXPECT_EQ(ops(ctx, ggdiff::nn::attention(ctx, q, k, v, 4, true, nullptr, true)),
                  (std::pair<int, int>{0, 2}));
        EXPECT_EQ(ops(ctx, ggdiff::nn::attention(ctx, q, k, v, 4, false, nullptr, true)),
                  (std::pair<int, int>{0, 2}));
        // Without it the kernels' one fused op, no kept product.
        EXPECT_EQ(ops(ctx, ggdiff::nn::attention(ctx, q, k, v, 4, true)),
                  (std::pair<int, int>{1, 0}));
    }
    ggml_free(ctx);
}

}  // namespace
