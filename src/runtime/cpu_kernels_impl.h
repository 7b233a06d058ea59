// Helpers shared by the CPU kernel files (runtime/cpu_kernels*.cpp); not a public API.
#pragma once

#include <ggml.h>

#include <cstddef>
#include <cstdint>
#include <utility>

// Vector variants of the element-wise loops for the CPUs ggml itself targets; the
// matrix products are OpenBLAS's, which picks its kernels at run time.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define GGDIFF_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define GGDIFF_CLONES
#endif

namespace ggdiff::cpu {

// C (m x n, ldc) = alpha * A (m x k, lda) * op(B), row-major, single-threaded; op(B) is
// B (k x n, ldb) or, with trans_b, B^T for B (n x k, ldb).
void gemm(bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
          const float* b, int64_t ldb, float* c, int64_t ldc);

// Per-thread scratch memory of at least n floats (ggml's CPU threads live as long as the
// process, so it is reused run after run). Two buffers per thread (slot 0 and 1): within a
// slot, split it, don't nest.
float* scratch(size_t n, int slot = 0);

// A row of n values of `type` (f16, bf16, or a type ggml can dequantize) as floats.
void widen_row(ggml_type type, const void* src, float* dst, int64_t n);

// [begin, end) of `n` items for thread `ith` of `nth`, in multiples of `align` where possible.
std::pair<int64_t, int64_t> share(int64_t n, int ith, int nth, int64_t align = 1);

// F(4x4, 3x3) Winograd convolution for stride 1 (runtime/cpu_winograd.cpp).
bool winograd_suits(const ggml_tensor* w, const ggml_tensor* x, int stride);
ggml_tensor* conv2d_winograd(ggml_context* ctx, ggml_tensor* w, ggml_tensor* x, ggml_tensor* b,
                             int pad);

}  // namespace ggdiff::cpu
