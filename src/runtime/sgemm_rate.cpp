#include "runtime/sgemm_rate.h"

#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml-cpu.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "runtime/cpu_kernels.h"
#include "runtime/graph_runner.h"

namespace ggdiff {

Result<double> measure_sgemm_gflops(int threads, int size) {
    if (!cpu::kernels_available()) {
        return Status::Error("the CPU kernels are off (no OpenBLAS, or GGDIFF_CPU_KERNELS=0)");
    }
    std::vector<ggml_backend_t> backends = cpu_backends(threads);
    if (backends.empty()) return Status::Error("no CPU backend");
    ggml_backend_t cpu = backends.back();

    ggml_init_params p = {8 * ggml_tensor_overhead() + ggml_graph_overhead(), nullptr, true};
    ggml_context* ctx = ggml_init(p);
    ggml_tensor* a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, size, size);
    ggml_tensor* b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, size, size);
    ggml_tensor* c = cpu::mul_mat(ctx, a, b);
    ggml_cgraph* gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, c);
    ggml_gallocr_t galloc = ggml_gallocr_new(ggml_backend_get_default_buffer_type(cpu));
    if (!ggml_gallocr_alloc_graph(galloc, gf)) {
        ggml_gallocr_free(galloc);
        ggml_free(ctx);
        return Status::Error("cannot allocate the product's buffers");
    }
    std::vector<float> values(static_cast<size_t>(size) * size);
    for (size_t i = 0; i < values.size(); ++i)
        values[i] = static_cast<float>(i % 7) * 0.25f - 0.75f;
    ggml_backend_tensor_set(a, values.data(), 0, ggml_nbytes(a));
    ggml_backend_tensor_set(b, values.data(), 0, ggml_nbytes(b));

    double best = 1e30;
    for (int run = 0; run < 4; ++run) {  // the first warms caches and threads
        const auto t0 = std::chrono::steady_clock::now();
        ggml_backend_graph_compute(cpu, gf);
        const double s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (run > 0) best = std::min(best, s);
    }
    ggml_gallocr_free(galloc);
    ggml_free(ctx);
    return 2.0 * static_cast<double>(size) * size * size / best / 1e9;
}

}  // namespace ggdiff
