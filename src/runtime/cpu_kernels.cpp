#include "runtime/cpu_kernels.h"

#include <dlfcn.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "core/log.h"
#include "runtime/cpu_kernels_impl.h"

namespace ggdiff::cpu {
namespace {

// --- OpenBLAS ----------------------------------------------------------------------

// cblas enums (CBLAS_ORDER, CBLAS_TRANSPOSE) and the LP64 interface of libopenblas.so.0.
constexpr int kRowMajor = 101;
constexpr int kNoTrans = 111;
constexpr int kTrans = 112;
using sgemm_fn = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int,
                          float, float*, int);
using set_threads_fn = void (*)(int);

struct Blas {
    sgemm_fn sgemm = nullptr;
};

Blas load_blas() {
    Blas b;
    const char* env = std::getenv("GGDIFF_CPU_KERNELS");
    if (env && std::strcmp(env, "0") == 0) {
        GGDIFF_LOG_DEBUG("cpu kernels: disabled by GGDIFF_CPU_KERNELS=0");
        return b;
    }
    // The same library ggml's BLAS backend uses, when that is loaded: one instance.
    void* h = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        GGDIFF_LOG_DEBUG("cpu kernels: OpenBLAS not found (%s); using ggml ops", dlerror());
        return b;
    }
    auto sgemm = reinterpret_cast<sgemm_fn>(dlsym(h, "cblas_sgemm"));
    auto set_threads = reinterpret_cast<set_threads_fn>(dlsym(h, "openblas_set_num_threads"));
    if (!sgemm || !set_threads) {
        GGDIFF_LOG_DEBUG("cpu kernels: libopenblas.so.0 lacks cblas_sgemm; using ggml ops");
        return b;
    }
    // Every ggml thread runs its own product: OpenBLAS must not start threads of its own.
    set_threads(1);
    b.sgemm = sgemm;
    return b;
}

const Blas& blas() {
    static const Blas b = load_blas();
    return b;
}

}  // namespace

void gemm(bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
          const float* b, int64_t ldb, float* c, int64_t ldc) {
    if (m <= 0 || n <= 0) return;
    blas().sgemm(kRowMajor, kNoTrans, trans_b ? kTrans : kNoTrans, static_cast<int>(m),
                 static_cast<int>(n), static_cast<int>(k), alpha, a, static_cast<int>(lda), b,
                 static_cast<int>(ldb), 0.0f, c, static_cast<int>(ldc));
}

float* scratch(size_t n, int slot) {
    thread_local std::vector<float> buf[2];
    std::vector<float>& b = buf[slot & 1];
    if (b.size() < n) b.resize(n);
    return b.data();
}

std::pair<int64_t, int64_t> share(int64_t n, int ith, int nth, int64_t align) {
    const int64_t units = (n + align - 1) / align;
    const int64_t b = units * ith / nth * align;
    const int64_t e = units * (ith + 1) / nth * align;
    return {std::min(b, n), std::min(e, n)};
}

namespace {

// Small per-op parameters travel in the custom op's userdata pointer itself, so they need
// no storage that outlives graph building: four 16-bit fields.
void* pack(uint64_t a, uint64_t b = 0, uint64_t c = 0, uint64_t d = 0) {
    return reinterpret_cast<void*>(static_cast<uintptr_t>(a | b << 16 | c << 32 | d << 48));
}
int field(void* p, int i) {
    return static_cast<int>(reinterpret_cast<uintptr_t>(p) >> (16 * i) & 0xffff);
}

template <typename T>
T* at(const ggml_tensor* t, size_t offset = 0) {
    return reinterpret_cast<T*>(static_cast<char*>(t->data) + offset);
}

// --- element-wise helpers --------------------------------------------------------------

// exp for x <= 88 (Cephes expf: range reduction by ln 2 and a degree-6 polynomial, about
// one ulp), branch-free so that the loops around it vectorize.
inline float exp_poly(float x) {
    x = std::max(x, -87.0f);
    const float t = x * 1.44269504088896341f;
    const float fn = (t + 12582912.0f) - 12582912.0f;  // round to nearest
    const float r = x - fn * 0.693359375f + fn * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    const int32_t bits = (static_cast<int32_t>(fn) + 127) << 23;
    float scale;
    std::memcpy(&scale, &bits, sizeof(scale));
    return p * scale;
}

// In-place softmax of x[0..n).
GGDIFF_CLONES void softmax_row(float* x, int64_t n) {
    constexpr int L = 16;
    float lanes[L];
    for (int j = 0; j < L; ++j) lanes[j] = -INFINITY;
    int64_t i = 0;
    for (; i + L <= n; i += L)
        for (int j = 0; j < L; ++j) lanes[j] = std::max(lanes[j], x[i + j]);
    float mx = -INFINITY;
    for (int j = 0; j < L; ++j) mx = std::max(mx, lanes[j]);
    for (; i < n; ++i) mx = std::max(mx, x[i]);

    for (int j = 0; j < L; ++j) lanes[j] = 0.0f;
    i = 0;
    for (; i + L <= n; i += L) {
        for (int j = 0; j < L; ++j) {
            const float e = exp_poly(x[i + j] - mx);
            x[i + j] = e;
            lanes[j] += e;
        }
    }
    float sum = 0.0f;
    for (int j = 0; j < L; ++j) sum += lanes[j];
    for (; i < n; ++i) {
        x[i] = exp_poly(x[i] - mx);
        sum += x[i];
    }
    const float inv = 1.0f / sum;
    for (i = 0; i < n; ++i) x[i] *= inv;
}

GGDIFF_CLONES void add_bias_rows(float* c, int64_t rows, int64_t n, int64_t ldc, const float* b) {
    for (int64_t r = 0; r < rows; ++r) {
        float* row = c + r * ldc;
        const float v = b[r];
        for (int64_t i = 0; i < n; ++i) row[i] += v;
    }
}

// --- mul_mat -----------------------------------------------------------------------

// f16 -> f32 for a row: 16 (AVX-512) or 8 (F16C) values per instruction where the CPU has them.
// The conversion is exact, so every variant gives the same floats. (A plain loop over
// _Float16 stays scalar: one vcvtph2ps per value, which made the widening of f16 weights a
// third of a DiT step.)
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx512f,f16c"))) void widen_f16_avx512(const uint16_t* src, float* dst,
                                                              int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
        // The zero-masked form: GCC 12 warns about the undefined source of the plain one.
        _mm512_storeu_ps(dst + i, _mm512_maskz_cvtph_ps(0xffff, h));
    }
    for (; i < n; ++i) dst[i] = _cvtsh_ss(src[i]);
}

__attribute__((target("avx,f16c"))) void widen_f16_f16c(const uint16_t* src, float* dst,
                                                        int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
    }
    for (; i < n; ++i) dst[i] = _cvtsh_ss(src[i]);
}

void widen_f16(const uint16_t* src, float* dst, int64_t n) {
    static const int level = __builtin_cpu_supports("avx512f") ? 2
                             : (__builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx"))
                                 ? 1
                                 : 0;
    if (level == 2) {
        widen_f16_avx512(src, dst, n);
    } else if (level == 1) {
        widen_f16_f16c(src, dst, n);
    } else {
        ggml_fp16_to_fp32_row(reinterpret_cast<const ggml_fp16_t*>(src), dst, n);
    }
}
#else
void widen_f16(const uint16_t* src, float* dst, int64_t n) {
    ggml_fp16_to_fp32_row(reinterpret_cast<const ggml_fp16_t*>(src), dst, n);
}
#endif

}  // namespace

void widen_row(ggml_type type, const void* src, float* dst, int64_t n) {
    if (type == GGML_TYPE_F16) {
        widen_f16(static_cast<const uint16_t*>(src), dst, n);
    } else if (type == GGML_TYPE_F32) {
        std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
    } else {
        ggml_get_type_traits(type)->to_float(src, dst, n);
    }
}

namespace {

// Floats of a non-f32 matrix widened at a time.
constexpr int64_t kWideBlock = int64_t{1} << 21;

// Rows [r0, r1) of a matrix of `type` with k values per row, rows `stride` bytes apart from
// `base`, widened to f32 a cache-sized block of rows at a time into scratch slot `slot`;
// use(first_row, rows, wide) gets each block (rows of k floats).
template <typename Use>
void for_widened_rows(ggml_type type, const char* base, size_t stride, int64_t r0, int64_t r1,
                      int64_t k, int slot, Use use) {
    const int64_t rows = std::clamp<int64_t>(kWideBlock / k, 16, 1024);
    float* wide = scratch(static_cast<size_t>(std::min(rows, r1 - r0) * k), slot);
    for (int64_t r = r0; r < r1; r += rows) {
        const int64_t nr = std::min(rows, r1 - r);
        for (int64_t i = 0; i < nr; ++i) widen_row(type, base + (r + i) * stride, wide + i * k, k);
        use(r, nr, wide);
    }
}

void mul_mat_op(ggml_tensor* dst, int ith, int nth, void*) {
    const ggml_tensor* a = dst->src[0];
    const ggml_tensor* b = dst->src[1];
    const int64_t k = a->ne[0], m = a->ne[1];
    const bool narrow = a->type != GGML_TYPE_F32;
    const int64_t ldb = b->nb[1] / 4, ldc = dst->nb[1] / 4;
    int64_t n = b->ne[1], ne2 = dst->ne[2], ne3 = dst->ne[3];
    // One matrix applied to a whole batch whose rows are evenly spaced (a linear layer on
    // [dim, tokens, batch]): a single product over all rows reads the matrix once.
    auto even_rows = [](const ggml_tensor* t) {
        return t->nb[2] == t->ne[1] * t->nb[1] && t->nb[3] == t->ne[2] * t->nb[2];
    };
    if (a->ne[2] == 1 && a->ne[3] == 1 && even_rows(b) && even_rows(dst)) {
        n *= ne2 * ne3;
        ne2 = ne3 = 1;
    }
    const int64_t r2 = ne2 / a->ne[2], r3 = ne3 / a->ne[3];
    const int64_t batches = ne2 * ne3;

    auto product = [&](int64_t bi, int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
        const int64_t i2 = bi % ne2, i3 = bi / ne2;
        const char* pa = at<const char>(a, (i2 / r2) * a->nb[2] + (i3 / r3) * a->nb[3]);
        const float* pb = at<const float>(b, i2 * b->nb[2] + i3 * b->nb[3]);
        float* pc = at<float>(dst, i2 * dst->nb[2] + i3 * dst->nb[3]);
        // dst rows are b rows: C[n x m] = B[n x k] * A[m x k]^T.
        if (!narrow) {
            const int64_t lda = a->nb[1] / 4;
            gemm(true, n1 - n0, m1 - m0, k, 1.0f, pb + n0 * ldb, ldb,
                 reinterpret_cast<const float*>(pa) + m0 * lda, lda, pc + n0 * ldc + m0, ldc);
            return;
        }
        // f16 and bf16 matrices: blocks of rows widened to f32 as the product goes.
        for_widened_rows(a->type, pa, a->nb[1], m0, m1, k, 0,
                         [&](int64_t mb, int64_t nr, const float* wide) {
                             gemm(true, n1 - n0, nr, k, 1.0f, pb + n0 * ldb, ldb, wide, k,
                                  pc + n0 * ldc + mb, ldc);
                         });
    };

    if (batches >= 4 * nth || batches % nth == 0) {
        auto [b0, b1] = share(batches, ith, nth);
        for (int64_t bi = b0; bi < b1; ++bi) product(bi, 0, m, 0, n);
        return;
    }
    for (int64_t bi = 0; bi < batches; ++bi) {
        // Narrow matrices are shared by rows, so that each row is widened once.
        if (m >= n || (narrow && m >= 16 * nth)) {
            auto [m0, m1] = share(m, ith, nth, 16);
            product(bi, m0, m1, 0, n);
        } else {
            auto [n0, n1] = share(n, ith, nth, 16);
            product(bi, 0, m, n0, n1);
        }
    }
}

// --- conv2d ------------------------------------------------------------------------

struct ConvShape {
    int64_t w, h, c, ow, oh, oc, kw, kh;
    int s, p;
};

// Columns for output rows [r0, r1): row k = (c*KH + ky)*KW + kx of `col` (rows cp floats
// apart) holds, for each output pixel of those rows, the input value under kernel tap
// (kx, ky) of channel c.
GGDIFF_CLONES void im2col_rows(const ConvShape& g, const float* x, int64_t r0, int64_t r1,
                               float* col, int64_t cp) {
    for (int64_t c = 0; c < g.c; ++c) {
        const float* plane = x + c * g.w * g.h;
        for (int64_t ky = 0; ky < g.kh; ++ky) {
            for (int64_t kx = 0; kx < g.kw; ++kx) {
                float* row = col + ((c * g.kh + ky) * g.kw + kx) * cp;
                for (int64_t oy = r0; oy < r1; ++oy) {
                    float* d = row + (oy - r0) * g.ow;
                    const int64_t iy = oy * g.s - g.p + ky;
                    if (iy < 0 || iy >= g.h) {
                        std::fill(d, d + g.ow, 0.0f);
                        continue;
                    }
                    const float* src = plane + iy * g.w;
                    if (g.s == 1) {
                        // ix = ox - p + kx, inside [0, w) for ox in [lo, hi).
                        const int64_t lo = std::clamp<int64_t>(g.p - kx, 0, g.ow);
                        const int64_t hi = std::clamp<int64_t>(g.w + g.p - kx, lo, g.ow);
                        std::fill(d, d + lo, 0.0f);
                        std::memcpy(d + lo, src + lo - g.p + kx,
                                    static_cast<size_t>(hi - lo) * sizeof(float));
                        std::fill(d + hi, d + g.ow, 0.0f);
                    } else {
                        for (int64_t ox = 0; ox < g.ow; ++ox) {
                            const int64_t ix = ox * g.s - g.p + kx;
                            d[ox] = ix >= 0 && ix < g.w ? src[ix] : 0.0f;
                        }
                    }
                }
            }
        }
    }
}

// Column chunks of at most this many floats per thread.
constexpr int64_t kColBudget = 1 << 21;

// out (rows c1 - c0, ldo) = W[c0..c1) (each row k values of the kernel w) x col (k x n,
// ldcol). A kernel stored narrower than f32 (f16, bf16) is widened a block of output
// channels at a time into the thread's second scratch buffer, so no f32 copy of it exists.
void kernel_product(const ggml_tensor* w, int64_t c0, int64_t c1, int64_t k, const float* col,
                    int64_t ldcol, int64_t n, float* out, int64_t ldo) {
    if (w->type == GGML_TYPE_F32) {
        gemm(false, c1 - c0, n, k, 1.0f, at<const float>(w) + c0 * k, k, col, ldcol, out, ldo);
        return;
    }
    // Slot 1: slot 0 holds the columns.
    for_widened_rows(w->type, at<const char>(w), ggml_row_size(w->type, k), c0, c1, k, 1,
                     [&](int64_t o, int64_t nr, const float* wide) {
                         gemm(false, nr, n, k, 1.0f, wide, k, col, ldcol, out + (o - c0) * ldo,
                              ldo);
                     });
}

void conv2d_op(ggml_tensor* dst, int ith, int nth, void* params) {
    const ggml_tensor* w = dst->src[0];
    const ggml_tensor* x = dst->src[1];
    const ggml_tensor* bias = dst->src[2];
    ConvShape g{x->ne[0],   x->ne[1], x->ne[2], dst->ne[0],       dst->ne[1],
                dst->ne[2], w->ne[0], w->ne[1], field(params, 0), field(params, 1)};
    const int64_t k = g.kw * g.kh * g.c;
    const int64_t pixels = g.ow * g.oh;
    const bool pointwise = g.kw == 1 && g.kh == 1 && g.s == 1 && g.p == 0;
    const float* bd = bias ? at<const float>(bias) : nullptr;

    // Large images: each thread takes a band of output rows with every channel. Small ones
    // (the deep UNet levels): each thread takes a slice of the output channels.
    int64_t r0 = 0, r1 = g.oh, c0 = 0, c1 = g.oc;
    if (g.oh >= nth && pixels >= 128 * nth) {
        std::tie(r0, r1) = share(g.oh, ith, nth);
    } else {
        std::tie(c0, c1) = share(g.oc, ith, nth, 16);
    }
    if (r0 >= r1 || c0 >= c1) return;
    const int64_t batch = x->ne[3];

    // Small images in a batch: one product for all of them, so that the kernel is read
    // once rather than once per image.
    if (batch > 1 && r0 == 0 && r1 == g.oh && k * pixels * batch <= kColBudget) {
        const int64_t ld = pixels * batch, ocs = c1 - c0;
        float* col = scratch(static_cast<size_t>((k + ocs) * ld));
        float* out = col + k * ld;
        for (int64_t in = 0; in < batch; ++in) {
            const float* xd = at<const float>(x, in * x->nb[3]);
            if (pointwise) {
                for (int64_t c = 0; c < g.c; ++c)
                    std::memcpy(col + c * ld + in * pixels, xd + c * pixels,
                                static_cast<size_t>(pixels) * sizeof(float));
            } else {
                im2col_rows(g, xd, 0, g.oh, col + in * pixels, ld);
            }
        }
        kernel_product(w, c0, c1, k, col, ld, ld, out, ld);
        if (bd) add_bias_rows(out, ocs, ld, ld, bd + c0);
        for (int64_t in = 0; in < batch; ++in) {
            float* od = at<float>(dst, in * dst->nb[3]) + c0 * pixels;
            for (int64_t o = 0; o < ocs; ++o)
                std::memcpy(od + o * pixels, out + o * ld + in * pixels,
                            static_cast<size_t>(pixels) * sizeof(float));
        }
        return;
    }

    const int64_t rows_per_chunk =
        pointwise ? r1 - r0 : std::clamp<int64_t>(kColBudget / (k * g.ow), 1, r1 - r0);
    for (int64_t in = 0; in < batch; ++in) {
        const float* xd = at<const float>(x, in * x->nb[3]);
        float* od = at<float>(dst, in * dst->nb[3]);
        for (int64_t a = r0; a < r1; a += rows_per_chunk) {
            const int64_t b = std::min(r1, a + rows_per_chunk);
            const int64_t cp = (b - a) * g.ow;
            const float* col = xd + a * g.ow;
            int64_t ldcol = pixels;
            if (!pointwise) {
                float* buf = scratch(static_cast<size_t>(k * cp));
                im2col_rows(g, xd, a, b, buf, cp);
                col = buf;
                ldcol = cp;
            }
            float* out = od + c0 * pixels + a * g.ow;
            kernel_product(w, c0, c1, k, col, ldcol, cp, out, pixels);
            if (bd) add_bias_rows(out, c1 - c0, cp, pixels, bd + c0);
        }
    }
}

// --- attention ---------------------------------------------------------------------

// Query rows per work item: the score block is this many rows of all keys.
constexpr int64_t kQueryBlock = 128;

void attention_op(ggml_tensor* dst, int ith, int nth, void* params) {
    const ggml_tensor* q = dst->src[0];
    const ggml_tensor* k = dst->src[1];
    const ggml_tensor* v = dst->src[2];
    const ggml_tensor* mask = dst->src[3];  // [Tk, N] additive key mask, or null
    const int64_t heads = field(params, 0);
    const bool causal = field(params, 1) != 0;
    const int64_t d = q->ne[0] / heads, tq = q->ne[1], tk = k->ne[1], batch = q->ne[2];
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    const int64_t ldq = q->nb[1] / 4, ldk = k->nb[1] / 4, ldv = v->nb[1] / 4, ldo = dst->nb[1] / 4;
    const int64_t blocks = (tq + kQueryBlock - 1) / kQueryBlock;

    auto [i0, i1] = share(batch * heads * blocks, ith, nth);
    for (int64_t item = i0; item < i1; ++item) {
        const int64_t n = item / (heads * blocks);
        const int64_t h = item / blocks % heads;
        const int64_t q0 = item % blocks * kQueryBlock;
        const int64_t rows = std::min(kQueryBlock, tq - q0);
        // Keys a causal block can see at most.
        const int64_t keys = causal ? std::min(tk, q0 + rows) : tk;
        const float* pq = at<const float>(q, n * q->nb[2]) + q0 * ldq + h * d;
        const float* pk = at<const float>(k, n * k->nb[2]) + h * d;
        const float* pv = at<const float>(v, n * v->nb[2]) + h * d;
        float* po = at<float>(dst, n * dst->nb[2]) + q0 * ldo + h * d;

        float* s = scratch(static_cast<size_t>(rows * keys));
        gemm(true, rows, keys, d, scale, pq, ldq, pk, ldk, s, keys);
        const float* pm = mask ? at<const float>(mask, n * mask->nb[1]) : nullptr;
        for (int64_t r = 0; r < rows; ++r) {
            float* row = s + r * keys;
            if (pm) {
                for (int64_t j = 0; j < keys; ++j) row[j] += pm[j];
            }
            const int64_t len = causal ? std::min(keys, q0 + r + 1) : keys;
            softmax_row(row, len);
            std::fill(row + len, row + keys, 0.0f);
        }
        gemm(false, rows, d, keys, 1.0f, s, keys, pv, ldv, po, ldo);
    }
}

// GGDIFF_WINOGRAD=0 turns the Winograd path off (direct im2col products for every conv).
bool winograd_enabled() {
    static const bool on = [] {
        const char* e = std::getenv("GGDIFF_WINOGRAD");
        return !(e && std::strcmp(e, "0") == 0);
    }();
    return on;
}

ggml_tensor* contiguous(ggml_context* ctx, ggml_tensor* t) {
    return ggml_is_contiguous(t) ? t : ggml_cont(ctx, t);
}

}  // namespace

bool kernels_available() {
    return blas().sgemm != nullptr;
}

namespace {
thread_local ggml_context* t_kernel_ctx = nullptr;
}  // namespace

KernelScope::KernelScope(ggml_context* ctx) : previous_(t_kernel_ctx) {
    t_kernel_ctx = kernels_available() ? ctx : nullptr;
}

KernelScope::~KernelScope() {
    t_kernel_ctx = previous_;
}

bool enabled(const ggml_context* ctx) {
    return ctx && ctx == t_kernel_ctx;
}

bool weight_type_ok(ggml_type type) {
    return type == GGML_TYPE_F32 || type == GGML_TYPE_F16 || type == GGML_TYPE_BF16;
}

bool can_conv2d(const ggml_tensor* w, const ggml_tensor* x, const ggml_tensor* b) {
    return kernels_available() && weight_type_ok(w->type) && ggml_is_contiguous(w) &&
           x->type == GGML_TYPE_F32 && (!b || b->type == GGML_TYPE_F32) && x->ne[2] == w->ne[2];
}

bool can_mul_mat(const ggml_tensor* a, const ggml_tensor* b) {
    bool a_ok = false;
    if (a->type == GGML_TYPE_F32) {
        a_ok = a->nb[0] == sizeof(float) && a->nb[1] % 4 == 0;
    } else if (a->type == GGML_TYPE_F16 || a->type == GGML_TYPE_BF16) {
        // Rows of whole blocks that ggml can turn into floats.
        a_ok = a->nb[0] == ggml_type_size(a->type) && a->ne[0] % ggml_blck_size(a->type) == 0 &&
               ggml_get_type_traits(a->type)->to_float != nullptr;
    }
    // Quantized matrices stay on ggml's own product, which quantizes the activations to its
    // q8 type block by block: that rounding is part of what a quantized model computes in the
    // reference engine and llama.cpp (widening to f32 here moved LTX-2's q4_0 golden by ~1).
    return kernels_available() && a_ok && b->type == GGML_TYPE_F32 && b->nb[0] == sizeof(float) &&
           b->nb[1] % 4 == 0 && a->ne[0] == b->ne[0] && b->ne[2] % a->ne[2] == 0 &&
           b->ne[3] % a->ne[3] == 0 && a->ne[0] < INT32_MAX && a->ne[1] < INT32_MAX &&
           b->ne[1] < INT32_MAX;
}

ggml_tensor* mul_mat(ggml_context* ctx, ggml_tensor* a, ggml_tensor* b) {
    ggml_tensor* args[] = {a, b};
    ggml_tensor* r = ggml_custom_4d(ctx, GGML_TYPE_F32, a->ne[1], b->ne[1], b->ne[2], b->ne[3],
                                    args, 2, mul_mat_op, GGML_N_TASKS_MAX, nullptr);
    return ggml_set_name(r, "cpu_mul_mat");
}

ggml_tensor* conv2d(ggml_context* ctx, ggml_tensor* w, ggml_tensor* x, ggml_tensor* b, int stride,
                    int pad) {
    x = contiguous(ctx, x);
    if (winograd_enabled() && winograd_suits(w, x, stride) && pad <= 2) {
        return conv2d_winograd(ctx, w, x, b, pad);
    }
    const int64_t ow = (x->ne[0] + 2 * pad - w->ne[0]) / stride + 1;
    const int64_t oh = (x->ne[1] + 2 * pad - w->ne[1]) / stride + 1;
    ggml_tensor* args[] = {w, x, b};
    ggml_tensor* r = ggml_custom_4d(
        ctx, GGML_TYPE_F32, ow, oh, w->ne[3], x->ne[3], args, b ? 3 : 2, conv2d_op,
        GGML_N_TASKS_MAX, pack(static_cast<uint64_t>(stride), static_cast<uint64_t>(pad)));
    return ggml_format_name(r, "cpu_conv2d_%dx%d", static_cast<int>(w->ne[0]),
                            static_cast<int>(w->ne[1]));
}

ggml_tensor* attention(ggml_context* ctx, ggml_tensor* q, ggml_tensor* k, ggml_tensor* v, int heads,
                       bool causal, ggml_tensor* key_mask) {
    ggml_tensor* args[] = {q, k, v, key_mask};
    const int n_args = key_mask ? 4 : 3;
    for (int i = 0; i < n_args; ++i) {
        // Rows of q, k, v are read with their strides; the mask is read as one block.
        const bool ok = i == 3 ? ggml_is_contiguous(args[i]) : args[i]->nb[0] == sizeof(float);
        if (!ok) args[i] = ggml_cont(ctx, args[i]);
    }
    ggml_tensor* r = ggml_custom_4d(ctx, GGML_TYPE_F32, q->ne[0], q->ne[1], q->ne[2], 1, args,
                                    n_args, attention_op, GGML_N_TASKS_MAX,
                                    pack(static_cast<uint64_t>(heads), causal ? 1 : 0));
    return ggml_set_name(r, "cpu_attention");
}

double kernel_flops(const ggml_tensor* t) {
    if (t->op != GGML_OP_CUSTOM) return 0.0;
    const std::string name = t->name;
    const double out = static_cast<double>(ggml_nelements(t));
    if (name == "cpu_mul_mat") return 2.0 * out * static_cast<double>(t->src[0]->ne[0]);
    if (name == "cpu_conv2d_winograd") {
        // The direct convolution's count, for comparable rates.
        return 2.0 * out * 9.0 * static_cast<double>(t->src[0]->ne[2]);
    }
    if (name.rfind("cpu_conv2d", 0) == 0) {
        const ggml_tensor* w = t->src[0];
        return 2.0 * out * static_cast<double>(w->ne[0] * w->ne[1] * w->ne[2]);
    }
    if (name == "cpu_attention") {
        const double tk = static_cast<double>(t->src[1]->ne[1]);
        return 4.0 * out * tk;
    }
    return 0.0;
}

void accelerate_mul_mats(ggml_context* ctx, std::vector<ggml_tensor*>& outs) {
    if (!kernels_available()) return;
    // Post-order walk over the graph; `done` maps each finished tensor to its replacement.
    // A tensor is entered once (ggml_cpy and ggml_cast list their result as a source of
    // itself, so sources already entered are not entered again).
    std::unordered_map<ggml_tensor*, ggml_tensor*> done;
    std::unordered_set<ggml_tensor*> entered;
    std::vector<std::pair<ggml_tensor*, int>> stack;
    auto enter = [&](ggml_tensor* t) {
        if (t && entered.insert(t).second) stack.emplace_back(t, 0);
    };
    auto replaced = [&](ggml_tensor* t) {
        auto it = done.find(t);
        return it == done.end() ? t : it->second;
    };
    for (ggml_tensor* out : outs) {
        enter(out);
        while (!stack.empty()) {
            ggml_tensor* t = stack.back().first;
            const int next = stack.back().second;
            if (next < GGML_MAX_SRC) {
                stack.back().second = next + 1;
                enter(t->src[next]);
                continue;
            }
            stack.pop_back();
            for (ggml_tensor*& s : t->src) {
                if (s) s = replaced(s);
            }
            if (t->view_src) t->view_src = replaced(t->view_src);
            ggml_tensor* r = t;
            // nn::attention's ggml_only products stay ggml's.
            if (t->op == GGML_OP_MUL_MAT && std::strcmp(t->name, kGgmlOnlyProduct) != 0 &&
                can_mul_mat(t->src[0], t->src[1])) {
                r = mul_mat(ctx, t->src[0], t->src[1]);
                r->flags |= t->flags;
            }
            done[t] = r;
        }
    }
    for (ggml_tensor*& out : outs) out = replaced(out);
}

}  // namespace ggdiff::cpu
