// F(4x4, 3x3) Winograd convolution (Lavin & Gray, "Fast Algorithms for Convolutional
// Neural Networks"): each 4x4 output tile costs 36 products per channel pair instead of
// 144, so the 3x3 convolutions that dominate UNets and VAE decoders need about a quarter
// of the multiplications. Two custom ops:
//   kernel transform  U[xi][oc][c] = (G g G^T)[xi] for the 36 frequencies xi,
//   convolution       per band of tile rows: input tiles V = B^T d B (channels
//                     innermost), 36 products M[xi] = V[xi] U[xi]^T, outputs A^T M A.
// Everything is computed in f32 (an f16 or bf16 kernel is widened as it is transformed);
// the transforms add rounding of a few ulp of the inputs.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <tuple>

#include "runtime/cpu_kernels_impl.h"

namespace ggdiff::cpu {
namespace {

// Tiles per band: V and M of a band take about this many floats (each of the 36 products
// then has a few dozen to a few hundred rows).
constexpr int64_t kBandFloats = int64_t{1} << 21;
// The transformed kernel lives in the compute buffer: 36 * C * OC floats at most this.
constexpr int64_t kMaxKernelFloats = int64_t{16} << 20;

template <typename T>
T* at(const ggml_tensor* t, size_t offset = 0) {
    return reinterpret_cast<T*>(static_cast<char*>(t->data) + offset);
}

// r[0..5] = B^T z for six vectors of n floats (z[i] + zs*i, r[i] + rs*i).
GGDIFF_CLONES void input_rows(const float* z, int64_t zs, float* r, int64_t rs, int64_t n) {
    const float *z0 = z, *z1 = z + zs, *z2 = z + 2 * zs, *z3 = z + 3 * zs, *z4 = z + 4 * zs,
                *z5 = z + 5 * zs;
    float *r0 = r, *r1 = r + rs, *r2 = r + 2 * rs, *r3 = r + 3 * rs, *r4 = r + 4 * rs,
          *r5 = r + 5 * rs;
    for (int64_t c = 0; c < n; ++c) {
        const float a = z1[c], b = z2[c], d = z3[c], e = z4[c];
        r0[c] = 4.0f * z0[c] - 5.0f * b + e;
        r1[c] = -4.0f * (a + b) + d + e;
        r2[c] = 4.0f * (a - b) - d + e;
        r3[c] = 2.0f * (d - a) - b + e;
        r4[c] = 2.0f * (a - d) - b + e;
        r5[c] = 4.0f * a - 5.0f * d + z5[c];
    }
}

// y[0..3] = A^T z (+ bias on the second pass) for six vectors of n floats.
GGDIFF_CLONES void output_rows(const float* z, int64_t zs, float* y, int64_t ys, int64_t n,
                               const float* bias) {
    const float *z0 = z, *z1 = z + zs, *z2 = z + 2 * zs, *z3 = z + 3 * zs, *z4 = z + 4 * zs,
                *z5 = z + 5 * zs;
    float *y0 = y, *y1 = y + ys, *y2 = y + 2 * ys, *y3 = y + 3 * ys;
    for (int64_t c = 0; c < n; ++c) {
        const float p = z1[c] + z2[c], m = z1[c] - z2[c];
        const float q = z3[c] + z4[c], s = z3[c] - z4[c];
        const float b = bias ? bias[c] : 0.0f;
        y0[c] = z0[c] + p + q + b;
        y1[c] = m + 2.0f * s + b;
        y2[c] = p + 4.0f * q + b;
        y3[c] = m + 8.0f * s + z5[c] + b;
    }
}

// dst[(r * cols + col) * ld + j] = src_j[r * src_row + col] for 8 channel planes src_j,
// i.e. a channel-innermost copy of a block of rows.
GGDIFF_CLONES void to_channels_last(const float* const* src, int64_t nsrc, int64_t rows,
                                    int64_t cols, int64_t src_row, float* dst, int64_t ld) {
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t col = 0; col < cols; ++col) {
            float* d = dst + (r * cols + col) * ld;
            for (int64_t j = 0; j < nsrc; ++j) d[j] = src[j][r * src_row + col];
        }
    }
}

// --- kernel transform ------------------------------------------------------------------

// G g G^T for kBlock kernels at once: g[9][kBlock] (g[ky * 3 + kx][j]) -> v[36][kBlock].
constexpr int64_t kBlock = 16;

GGDIFF_CLONES void kernel_block(const float (*g)[kBlock], float (*v)[kBlock]) {
    constexpr float k4 = 1.0f / 4.0f, k6 = 1.0f / 6.0f, k12 = 1.0f / 12.0f, k24 = 1.0f / 24.0f;
    float t[6][3][kBlock];
    for (int kx = 0; kx < 3; ++kx) {  // t = G g over ky
        for (int64_t j = 0; j < kBlock; ++j) {
            const float a = g[kx][j], b = g[3 + kx][j], d = g[6 + kx][j];
            t[0][kx][j] = a * k4;
            t[1][kx][j] = -(a + b + d) * k6;
            t[2][kx][j] = -(a - b + d) * k6;
            t[3][kx][j] = a * k24 + b * k12 + d * k6;
            t[4][kx][j] = a * k24 - b * k12 + d * k6;
            t[5][kx][j] = d;
        }
    }
    for (int k = 0; k < 6; ++k) {  // then over kx
        for (int64_t j = 0; j < kBlock; ++j) {
            const float a = t[k][0][j], b = t[k][1][j], d = t[k][2][j];
            v[k * 6 + 0][j] = a * k4;
            v[k * 6 + 1][j] = -(a + b + d) * k6;
            v[k * 6 + 2][j] = -(a - b + d) * k6;
            v[k * 6 + 3][j] = a * k24 + b * k12 + d * k6;
            v[k * 6 + 4][j] = a * k24 - b * k12 + d * k6;
            v[k * 6 + 5][j] = d;
        }
    }
}

void kernel_op(ggml_tensor* dst, int ith, int nth, void*) {
    const ggml_tensor* w = dst->src[0];
    const int64_t c_in = w->ne[2], oc = w->ne[3];
    // An f16 or bf16 kernel is widened 16 kernels (144 values) at a time as it is read.
    const size_t kernel_bytes = ggml_row_size(w->type, 9);
    float* u = at<float>(dst);
    // U[xi][o][c]: for one output channel the kernels of consecutive input channels are
    // read in order, and each of the 36 rows is written in order.
    auto [o0, o1] = share(oc, ith, nth);
    for (int64_t o = o0; o < o1; ++o) {
        for (int64_t cb = 0; cb < c_in; cb += kBlock) {
            const int64_t nc = std::min(kBlock, c_in - cb);
            float g[9][kBlock] = {};
            float v[36][kBlock];
            float src[9 * kBlock];
            widen_row(w->type, at<const char>(w, (o * c_in + cb) * kernel_bytes), src, 9 * nc);
            for (int64_t j = 0; j < nc; ++j)
                for (int i = 0; i < 9; ++i) g[i][j] = src[j * 9 + i];
            kernel_block(g, v);
            float* d = u + o * c_in + cb;
            if (nc == kBlock) {  // a fixed size, so the copies are inlined
                for (int64_t xi = 0; xi < 36; ++xi)
                    std::memcpy(d + xi * oc * c_in, v[xi], sizeof(v[xi]));
            } else {
                for (int64_t xi = 0; xi < 36; ++xi)
                    std::memcpy(d + xi * oc * c_in, v[xi], static_cast<size_t>(nc) * sizeof(float));
            }
        }
    }
}

// --- convolution -------------------------------------------------------------------

struct Geometry {
    int64_t w, h, c, oc, ow, oh, tw, th, band_rows, bands, pad;
};

// One band of tile rows [ty0, ty0 + nty) of image n, output channels [o0, o1).
void conv_band(const Geometry& g, const ggml_tensor* u, const ggml_tensor* x,
               const ggml_tensor* bias, ggml_tensor* dst, int64_t n, int64_t ty0, int64_t nty,
               int64_t o0, int64_t o1) {
    const int64_t c = g.c, ocs = o1 - o0, tiles = nty * g.tw;
    const int64_t rows_in = 4 * nty + 2, cols_in = 4 * g.tw + 2;
    const int64_t rows_out = 4 * nty, cols_out = 4 * g.tw;
    // Scratch: the input band channels-last, the per-tile temporaries, V, M and the
    // output band channels-last.
    const int64_t n_in = rows_in * cols_in * c, n_tmp = 36 * std::max(c, ocs), n_v = 36 * tiles * c,
                  n_m = 36 * tiles * ocs;
    float* in = scratch(static_cast<size_t>(n_in + n_tmp + n_v + n_m + rows_out * cols_out * ocs));
    float* tmp = in + n_in;
    float* v = tmp + n_tmp;
    float* m = v + n_v;
    float* out = m + n_m;

    // 1. Input rows 4*ty0 - pad .. (zero outside the image), channels innermost.
    const float* xd = at<const float>(x, static_cast<size_t>(n) * x->nb[3]);
    std::fill(in, in + n_in, 0.0f);
    const int64_t iy0 = 4 * ty0 - g.pad;
    const int64_t r_lo = std::max<int64_t>(0, -iy0), r_hi = std::min(rows_in, g.h - iy0);
    const int64_t c_lo = g.pad, c_hi = std::min(cols_in, g.w + g.pad);  // ix = col - pad
    if (r_lo < r_hi && c_lo < c_hi) {
        for (int64_t c0 = 0; c0 < c; c0 += 8) {
            const int64_t nc = std::min<int64_t>(8, c - c0);
            const float* src[8];
            for (int64_t j = 0; j < nc; ++j)
                src[j] = xd + (c0 + j) * g.w * g.h + (iy0 + r_lo) * g.w + (c_lo - g.pad);
            // Rows r_lo.., columns c_lo.. of the band: offsets inside `in`.
            float* d = in + (r_lo * cols_in + c_lo) * c + c0;
            for (int64_t r = 0; r < r_hi - r_lo; ++r) {
                const float* rows[8];
                for (int64_t j = 0; j < nc; ++j) rows[j] = src[j] + r * g.w;
                to_channels_last(rows, nc, 1, c_hi - c_lo, 0, d + r * cols_in * c, c);
            }
        }
    }

    // 2. V[xi][t][:] = (B^T d B)[xi] for each 6x6 input tile d.
    for (int64_t ty = 0; ty < nty; ++ty) {
        for (int64_t tx = 0; tx < g.tw; ++tx) {
            const int64_t t = ty * g.tw + tx;
            const float* d = in + ((4 * ty) * cols_in + 4 * tx) * c;
            // tmp[k][j] = sum_i B^T[k][i] d[i][j]: one pass per column j.
            for (int64_t j = 0; j < 6; ++j)
                input_rows(d + j * c, cols_in * c, tmp + j * c, 6 * c, c);
            // V[k][l] = sum_j B^T[l][j] tmp[k][j]: one pass per row k.
            for (int64_t k = 0; k < 6; ++k)
                input_rows(tmp + k * 6 * c, c, v + (k * 6 * tiles + t) * c, tiles * c, c);
        }
    }

    // 3. M[xi] (tiles x ocs) = V[xi] (tiles x c) U[xi]^T (U[xi]: oc x c, rows o0..o1).
    const float* ud = at<const float>(u);
    for (int64_t xi = 0; xi < 36; ++xi) {
        gemm(true, tiles, ocs, c, 1.0f, v + xi * tiles * c, c, ud + (xi * g.oc + o0) * c, c,
             m + xi * tiles * ocs, ocs);
    }

    // 4. Output tiles A^T M A (+ bias), channels innermost.
    const float* bd = bias ? at<const float>(bias) + o0 : nullptr;
    for (int64_t ty = 0; ty < nty; ++ty) {
        for (int64_t tx = 0; tx < g.tw; ++tx) {
            const int64_t t = ty * g.tw + tx;
            // tmp[i][l] = sum_k A^T[i][k] M[k][l]: one pass per column l.
            for (int64_t l = 0; l < 6; ++l)
                output_rows(m + (l * tiles + t) * ocs, 6 * tiles * ocs, tmp + l * ocs, 6 * ocs, ocs,
                            nullptr);
            // y[i][j] = sum_l A^T[j][l] tmp[i][l]: one pass per row i.
            for (int64_t i = 0; i < 4; ++i)
                output_rows(tmp + i * 6 * ocs, ocs, out + ((4 * ty + i) * cols_out + 4 * tx) * ocs,
                            ocs, ocs, bd);
        }
    }

    // 5. Back to the [W, H, C] layout, cut to the image.
    float* od = at<float>(dst, static_cast<size_t>(n) * dst->nb[3]);
    const int64_t oy0 = 4 * ty0;
    const int64_t nrows = std::min(rows_out, g.oh - oy0), ncols = std::min(cols_out, g.ow);
    for (int64_t o = 0; o < ocs; ++o) {
        float* plane = od + (o0 + o) * g.ow * g.oh + oy0 * g.ow;
        for (int64_t r = 0; r < nrows; ++r) {
            const float* s = out + r * cols_out * ocs + o;
            float* d = plane + r * g.ow;
            for (int64_t col = 0; col < ncols; ++col) d[col] = s[col * ocs];
        }
    }
}

void conv_op(ggml_tensor* dst, int ith, int nth, void* params) {
    const ggml_tensor* x = dst->src[0];
    const ggml_tensor* u = dst->src[1];
    const ggml_tensor* bias = dst->src[2];
    Geometry g;
    g.w = x->ne[0];
    g.h = x->ne[1];
    g.c = x->ne[2];
    g.oc = dst->ne[2];
    g.ow = dst->ne[0];
    g.oh = dst->ne[1];
    g.pad = static_cast<int64_t>(reinterpret_cast<uintptr_t>(params));
    g.tw = (g.ow + 3) / 4;
    g.th = (g.oh + 3) / 4;
    const int64_t band_tiles = std::clamp<int64_t>(kBandFloats / (36 * (g.c + g.oc)), 32, 256);
    g.band_rows = std::clamp<int64_t>((band_tiles + g.tw - 1) / g.tw, 1, g.th);
    g.bands = (g.th + g.band_rows - 1) / g.band_rows;

    // Bands go to threads whole; with fewer bands than threads, the output channels are
    // shared out instead (each thread then transforms the whole input).
    const int64_t items = x->ne[3] * g.bands;
    int64_t i0 = 0, i1 = items, o0 = 0, o1 = g.oc;
    if (items >= nth) {
        std::tie(i0, i1) = share(items, ith, nth);
    } else {
        std::tie(o0, o1) = share(g.oc, ith, nth, 16);
    }
    if (o0 >= o1) return;
    for (int64_t item = i0; item < i1; ++item) {
        const int64_t n = item / g.bands, band = item % g.bands;
        const int64_t ty0 = band * g.band_rows;
        const int64_t nty = std::min(g.band_rows, g.th - ty0);
        conv_band(g, u, x, bias, dst, n, ty0, nty, o0, o1);
    }
}

}  // namespace

bool winograd_suits(const ggml_tensor* w, const ggml_tensor* x, int stride) {
    if (stride != 1 || w->ne[0] != 3 || w->ne[1] != 3) return false;
    const int64_t c = w->ne[2], oc = w->ne[3];
    const int64_t tiles = x->ne[3] * ((x->ne[0] + 3) / 4) * ((x->ne[1] + 3) / 4);
    // Few tiles: the kernel transform (per run) costs more than the products save.
    return c >= 8 && oc >= 8 && tiles >= 32 && 36 * c * oc <= kMaxKernelFloats;
}

ggml_tensor* conv2d_winograd(ggml_context* ctx, ggml_tensor* w, ggml_tensor* x, ggml_tensor* b,
                             int pad) {
    const int64_t c = w->ne[2], oc = w->ne[3];
    ggml_tensor* wa[] = {w};
    ggml_tensor* u = ggml_custom_4d(ctx, GGML_TYPE_F32, c, oc, 36, 1, wa, 1, kernel_op,
                                    GGML_N_TASKS_MAX, nullptr);
    ggml_set_name(u, "cpu_winograd_kernel");
    const int64_t ow = x->ne[0] + 2 * pad - 2, oh = x->ne[1] + 2 * pad - 2;
    // x first: the graph then computes the transformed kernel just before the convolution
    // (after everything x needs) instead of at the start, where all of them would be alive
    // at once.
    ggml_tensor* args[] = {x, u, b};
    ggml_tensor* y =
        ggml_custom_4d(ctx, GGML_TYPE_F32, ow, oh, oc, x->ne[3], args, b ? 3 : 2, conv_op,
                       GGML_N_TASKS_MAX, reinterpret_cast<void*>(static_cast<uintptr_t>(pad)));
    return ggml_set_name(y, "cpu_conv2d_winograd");
}

}  // namespace ggdiff::cpu
