// GraphBuilder inputs: the builder keeps the values it is given until the run uploads them, so
// a caller's host tensor may go away or change after input() returns (a named local of a
// builder helper once dangled and the DiT read freed memory).
#include <gtest/gtest.h>

#include <memory>

#include "io/tensor_index.h"
#include "runtime/graph_runner.h"
#include "runtime/weight_store.h"

namespace ggdiff {
namespace {

// a + b, where a comes from a helper's local tensor that is gone before the run, and b is
// changed after input() took it.
TEST(GraphInputs, ValuesAreTakenWhenDeclared) {
    TensorIndex index;
    WeightStore weights(index);
    GraphRunner runner(cpu_backends(1), "test");
    auto from_helper = [](GraphBuilder& gb) {
        auto local = std::make_unique<HostTensor>(std::vector<int64_t>{4}, 2.0f);
        ggml_tensor* t = gb.input(*local);
        local->data.assign(4, -100.0f);  // overwritten, then freed before the run
        return t;
    };
    HostTensor b({4}, 3.0f);
    auto r = runner.run(weights, [&](GraphBuilder& gb) -> std::vector<ggml_tensor*> {
        ggml_tensor* a = from_helper(gb);
        ggml_tensor* bt = gb.input(b);
        b.data.assign(4, 50.0f);
        return {ggml_add(gb.ctx(), a, bt)};
    });
    ASSERT_TRUE(r.ok()) << r.status().message();
    ASSERT_EQ(r->size(), 1u);
    for (float v : (*r)[0].data) EXPECT_FLOAT_EQ(v, 5.0f);

    // A moved tensor keeps its own buffer.
    HostTensor c({4}, 7.0f);
    auto moved = runner.run(weights, [&](GraphBuilder& gb) -> std::vector<ggml_tensor*> {
        HostTensor d = c;
        return {ggml_scale(gb.ctx(), gb.input(std::move(d)), 2.0f)};
    });
    ASSERT_TRUE(moved.ok()) << moved.status().message();
    for (float v : (*moved)[0].data) EXPECT_FLOAT_EQ(v, 14.0f);
}

}  // namespace
}  // namespace ggdiff
