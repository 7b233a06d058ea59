// Building blocks shared by the diffusion transformers (FLUX, Qwen Image, SD3, Z-Image):
// norms without or with a scale vector, adaLN modulation, 2x2 patching of latents, and
// rotary position embeddings over several position axes. Token tensors are
// [dim, tokens, N]; latents are [W, H, C, N].
#pragma once

#include <string>
#include <vector>

#include "nn/weights.h"

namespace ggdiff::nn {

// LayerNorm over ne[0] without affine parameters (elementwise_affine=False).
ggml_tensor* layer_norm_plain(ggml_context* ctx, ggml_tensor* x, float eps = 1e-6f);

// RMSNorm over ne[0] times the weight `name` ([dim]).
ggml_tensor* rms_norm(Ctx& c, ggml_tensor* x, const std::string& name, int64_t dim,
                      float eps = 1e-6f);

// The modulation vectors of one adaLN linear: out = linear(silu(vec)) of width
// chunks * dim, split into `chunks` tensors [dim, 1, N] (shift, scale, gate, ...).
std::vector<ggml_tensor*> modulation(Ctx& c, ggml_tensor* vec, const std::string& prefix,
                                     int64_t dim, int chunks, bool bias = true);

// Features [first, first + count) of x [rows, T, N] as a view (one part of a fused
// projection's output).
ggml_tensor* feature_rows(ggml_context* ctx, ggml_tensor* x, int64_t first, int64_t count);
// Tokens [from, from + count) of x [dim, T, N], contiguous (one stream of a joint sequence).
ggml_tensor* token_range(ggml_context* ctx, ggml_tensor* x, int64_t from, int64_t count);

// FLUX's MLP embedder of a scalar (timestep or guidance) into `hidden`: 256 sinusoidal
// features of value * 1000 (max period 10000), then in_layer, SiLU, out_layer under prefix p.
ggml_tensor* scalar_embedder(Ctx& c, ggml_tensor* v, const std::string& p, int64_t hidden,
                             bool bias = true);

// FLUX's per-head q/k RMSNorm: q, k, v [heads*d, T, N] (possibly views into a fused
// projection) -> q and k normalized per head by "<norm>query_norm.scale" /
// "<norm>key_norm.scale" ([d]), v made contiguous.
struct QkvHeads {
    ggml_tensor *q, *k, *v;
};
QkvHeads norm_qk_heads(Ctx& c, ggml_tensor* q, ggml_tensor* k, ggml_tensor* v,
                       const std::string& norm, int64_t d, int64_t heads, float eps = 1e-6f);

// The attention inputs of one FLUX stream x [hidden, T, N]: the fused linear `fused` (3 x
// hidden rows) or, with `split`, the linears "<split_prefix>q", "k", "v"; q and k normalized
// per head as norm_qk_heads does with `norm`.
QkvHeads project_qkv(Ctx& c, ggml_tensor* x, const std::string& fused, bool split,
                     const std::string& split_prefix, const std::string& norm, int64_t d,
                     int64_t heads, bool bias, float eps = 1e-6f);

// RoPE on q and k (rope_pairs with cos and sin), then attention over every token (key_mask:
// an additive [T, N] key mask as nn::attention takes it, or null).
ggml_tensor* rope_attention(ggml_context* ctx, ggml_tensor* q, ggml_tensor* k, ggml_tensor* v,
                            ggml_tensor* cos, ggml_tensor* sin, int heads,
                            ggml_tensor* key_mask = nullptr);

// x * (1 + scale) + shift; x [dim, T, N], shift and scale [dim, 1, N].
ggml_tensor* modulate(ggml_context* ctx, ggml_tensor* x, ggml_tensor* shift, ggml_tensor* scale);

// Latent [W, H, C, N] zero-padded right and bottom to multiples of p (x itself when W and H
// already are), and the inverse: the top-left W x H of a padded latent (x when it fits).
// With wrap_x / wrap_y (seamless tiling) the padding on that axis repeats the latent's
// first columns / rows instead of zeros.
ggml_tensor* pad_to_patch(ggml_context* ctx, ggml_tensor* x, int p, bool wrap_x = false,
                          bool wrap_y = false);
ggml_tensor* crop_latent(ggml_context* ctx, ggml_tensor* x, int64_t w, int64_t h);

// Latent [W, H, C, N] (W, H multiples of p) -> tokens [C*p*p, (W/p)*(H/p), N], tokens in
// row-major patch order, features ordered (c, row in patch, column in patch).
ggml_tensor* patchify(ggml_context* ctx, ggml_tensor* x, int p);
// The inverse: tokens [C*p*p, w*h, N] -> latent [w*p, h*p, C, N].
ggml_tensor* unpatchify(ggml_context* ctx, ggml_tensor* x, int64_t w, int64_t h, int p);

// Rotary embedding of interleaved pairs (x[2i], x[2i+1]) of every head:
// x [heads*d, T, N]; cos and sin [1, d/2, 1, T] (a per-token angle for each pair, the
// same for every head and batch item) -> [heads*d, T, N].
ggml_tensor* rope_pairs(ggml_context* ctx, ggml_tensor* x, ggml_tensor* cos, ggml_tensor* sin,
                        int heads);

// Rotary embedding of the two halves of every head (GPT-NeoX style): pair i is (x[i],
// x[i + d/2]); x [heads*d, T, N]; cos and sin [d/2, 1, T, 1] (a per-token angle for each pair,
// the same for every head and batch item; the memory layout of rope_pairs' tables) ->
// [heads*d, T, N].
ggml_tensor* rope_halves(ggml_context* ctx, ggml_tensor* x, ggml_tensor* cos, ggml_tensor* sin,
                         int heads);

// Seamless tiling of a DiT's RoPE: which image axes wrap around (x: columns, y: rows).
struct RopeWrap {
    bool x = false, y = false;
    bool any() const { return x || y; }
};

// The RoPE angle of position `pos` at frequency `omega`. On an axis that wraps after `wrap`
// positions (wrap > 0; 0: no wrap) the frequency is first moved to the nearest one that
// turns a whole number of times over `wrap` positions (round(omega * wrap / 2pi) turns, as
// stable-diffusion.cpp does), so that position wrap looks like position 0 and the image's
// opposite edges are neighbours.
float rope_angle(float pos, float omega, int wrap);

// The wrap lengths (rope_table's `wrap`) of an h x w grid of image tokens starting at token
// `first` of a sequence of `axes` position values per token: its row axis `axis_y` wraps
// after h positions when wrap.y, its column axis `axis_x` after w when wrap.x. `lengths` is
// grown (with zeros: no wrap) to cover the grid.
void wrap_grid(std::vector<int>& lengths, size_t axes, int64_t first, int64_t h, int64_t w,
               RopeWrap wrap, size_t axis_y = 1, size_t axis_x = 2);

// Host side: the angles of multi-axis RoPE (FLUX's EmbedND). ids holds `axes` position
// values per token (token-major); axis a covers axes_dim[a] head dimensions, pair j of it
// turning at theta^(-2j / axes_dim[a]). `wrap` (empty: none; else laid out as ids, missing
// tail entries 0) holds each token's wrap length on each axis (see rope_angle). Returns cos
// and sin, each [T][sum(axes_dim)/2].
struct RopeTable {
    std::vector<float> cos, sin;  // T * pairs, token-major
    int64_t pairs = 0, tokens = 0;
};
RopeTable rope_table(const std::vector<float>& ids, const std::vector<int>& axes_dim, float theta,
                     const std::vector<int>& wrap = {});

}  // namespace ggdiff::nn
