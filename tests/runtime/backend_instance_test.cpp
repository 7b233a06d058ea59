// Backend instances: a data-parallel replica computes on backends of its own (a ggml backend
// cannot compute on two threads at once), chosen by the BackendInstanceScope of its thread.
#include <gtest/gtest.h>

#include <thread>

#include "io/tensor_index.h"
#include "runtime/graph_runner.h"
#include "runtime/weight_store.h"

namespace ggdiff {
namespace {

ggml_backend_t cpu_of(const std::vector<ggml_backend_t>& backends) {
    for (ggml_backend_t b : backends) {
        ggml_backend_dev_t d = ggml_backend_get_device(b);
        if (d && ggml_backend_dev_type(d) == GGML_BACKEND_DEVICE_TYPE_CPU) return b;
    }
    return nullptr;
}

TEST(BackendInstances, EachInstanceHasItsOwnBackends) {
    auto first = backend_for_device("CPU", 1);
    ASSERT_TRUE(first.ok()) << first.status().message();
    EXPECT_EQ(*backend_for_device("CPU", 1), *first);  // cached
    EXPECT_EQ(cpu_of(cpu_backends(1)), *first);

    ggml_backend_t second = nullptr;
    {
        BackendInstanceScope scope(1);
        auto b = backend_for_device("CPU", 1);
        ASSERT_TRUE(b.ok());
        second = *b;
        EXPECT_NE(second, *first);
        EXPECT_EQ(cpu_of(cpu_backends(1)), second);
        {
            BackendInstanceScope inner(0);
            EXPECT_EQ(*backend_for_device("CPU", 1), *first);
        }
        EXPECT_EQ(*backend_for_device("CPU", 1), second);
    }
    EXPECT_EQ(*backend_for_device("CPU", 1), *first);  // the scope is over

    // The instance belongs to the thread that set it; another thread in instance 1 gets the
    // same cached backend as above.
    ggml_backend_t from_thread = nullptr, plain_thread = nullptr;
    std::thread t([&] {
        plain_thread = *backend_for_device("CPU", 1);
        BackendInstanceScope scope(1);
        from_thread = *backend_for_device("CPU", 1);
    });
    t.join();
    EXPECT_EQ(plain_thread, *first);
    EXPECT_EQ(from_thread, second);
}

TEST(BackendInstances, FlopsAreCountedPerThread) {
    // A 4x4 product computed on another thread counts there and in the process total only.
    const double mine = computed_flops_on_this_thread();
    const double total = computed_flops();
    double theirs = 0.0;
    std::string error;
    std::thread t([&] {
        TensorIndex index;
        WeightStore weights(index);
        GraphRunner runner(cpu_backends(1), "test");
        HostTensor a({4, 4}), b({4, 4});
        auto r = runner.run(weights, [&](GraphBuilder& gb) -> std::vector<ggml_tensor*> {
            return {ggml_mul_mat(gb.ctx(), gb.input(a), gb.input(b))};
        });
        if (!r.ok()) error = r.status().message();
        theirs = computed_flops_on_this_thread();
    });
    t.join();
    ASSERT_TRUE(error.empty()) << error;
    EXPECT_GT(theirs, 0.0);
    EXPECT_EQ(computed_flops_on_this_thread(), mine);
    EXPECT_GE(computed_flops(), total + theirs);
}

}  // namespace
}  // namespace ggdiff
