// Fast CPU paths for the ops that dominate diffusion models: matrix products,
// convolutions and attention, as ggml custom ops computed by the CPU backend's own
// threads. Each thread calls a single-threaded OpenBLAS sgemm on its share of the
// work, so there is one thread pool (no OpenBLAS threads spinning against ggml's),
// activations stay f32, and convolutions build their im2col in small per-thread
// chunks instead of one image-sized buffer. 3x3 convolutions over enough pixels use
// F(4x4, 3x3) Winograd products (runtime/cpu_winograd.cpp), about a quarter of the
// multiplications.
//
// The kernels need OpenBLAS (libopenblas.so.0, loaded at run time; its own threading
// is set to one thread). Without it, or with GGDIFF_CPU_KERNELS=0 in the environment,
// kernels_available() is false and callers use plain ggml ops. GGDIFF_WINOGRAD=0 keeps
// every convolution on the direct path.
#pragma once

#include <ggml.h>

#include <vector>

namespace ggdiff::cpu {

// Whether the kernels can be used (OpenBLAS found, not disabled). Loads it once.
bool kernels_available();

// Marks the graph being built in `ctx` on this thread as one for the CPU kernels (the
// GraphRunner of a CPU-only module holds one while its graph is built); the nn layers ask
// enabled() and emit the kernels instead of plain ggml ops.
class KernelScope {
  public:
    explicit KernelScope(ggml_context* ctx);
    ~KernelScope();
    KernelScope(const KernelScope&) = delete;
    KernelScope& operator=(const KernelScope&) = delete;

  private:
    ggml_context* previous_;
};
bool enabled(const ggml_context* ctx);

// Weight types the kernels read as they are (widened to f32 block by block where needed):
// f32, f16 and bf16 for every kernel (quantized matrices stay on ggml's own product).
bool weight_type_ok(ggml_type type);

// ggml_mul_mat(a, b) for f32, f16 or bf16 a and f32 b whose rows are contiguous: a [K,
// M, A2, A3], b [K, N, B2, B3] -> [M, N, B2, B3], with a broadcast over the outer dimensions. An
// f16 or bf16 a is widened to f32 block by block as the product goes. Quantized a is left to
// ggml, whose product rounds the activations to its q8 types as the reference engine's does.
bool can_mul_mat(const ggml_tensor* a, const ggml_tensor* b);
ggml_tensor* mul_mat(ggml_context* ctx, ggml_tensor* a, ggml_tensor* b);

// 2-D convolution with an optional per-channel bias: w [KW, KH, C, OC] f32, f16 or bf16
// (read in place, widened a block of output channels at a time), x [W, H, C, N] f32, b [OC]
// f32 or nullptr -> [OW, OH, OC, N]; symmetric zero padding, no dilation. can_conv2d() says
// whether the operands suit it.
// 3x3 stride-1 convolutions with enough 4x4 output tiles go through Winograd (two nodes:
// the transformed kernel, 36/9 of the kernel's size in the compute buffer, then the
// convolution).
bool can_conv2d(const ggml_tensor* w, const ggml_tensor* x, const ggml_tensor* b);
ggml_tensor* conv2d(ggml_context* ctx, ggml_tensor* w, ggml_tensor* x, ggml_tensor* b, int stride,
                    int pad);

// Scaled dot-product attention, softmax in f32: q [heads*d, Tq, N], k and v [heads*d, Tk, N]
// -> [heads*d, Tq, N]. causal: query i sees keys 0..i only. key_mask (f32 [Tk, N] or null) is
// added to every query's logits after scaling (0 keeps a key, -inf drops it).
ggml_tensor* attention(ggml_context* ctx, ggml_tensor* q, ggml_tensor* k, ggml_tensor* v, int heads,
                       bool causal, ggml_tensor* key_mask = nullptr);

// Floating-point operations of a node made by the functions above (0 for other nodes).
double kernel_flops(const ggml_tensor* t);

// Replaces every ggml_mul_mat reachable from `outs` that can_mul_mat() accepts by the fast
// kernel (the graph's other users of those products are rewired); `outs` is updated. The
// replaced nodes stay in `ctx` unused: allocate the graph (gallocr, sched), not the context.
void accelerate_mul_mats(ggml_context* ctx, std::vector<ggml_tensor*>& outs);

// The name of a product accelerate_mul_mats leaves to ggml (nn::attention's ggml_only).
inline constexpr const char* kGgmlOnlyProduct = "ggml_only_mul_mat";

}  // namespace ggdiff::cpu
