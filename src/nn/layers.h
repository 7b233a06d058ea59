// Layer builders shared by every model. Tensors use ggml layout: an image batch is
// [W, H, C, N]; a token sequence is [dim, tokens, N]. Weight names are the prefix
// plus ".weight" / ".bias" in the canonical (LDM) naming.
#pragma once

#include <string>

#include "nn/weights.h"

namespace ggdiff::nn {

// y = x W^T + b over ne[0]; weight torch [out, in].
ggml_tensor* linear(Ctx& c, ggml_tensor* x, const std::string& prefix, int64_t in, int64_t out,
                    bool bias = true);

// 2-D convolution, weight torch [out, in, k, k]; input [W, H, in, N]. On the CPU kernels
// im2col or Winograd; elsewhere ggml's direct convolution when the module chose it, else
// ggml's im2col + product. With seamless tiling (KernelChoices::circular_x/y) the padding
// wraps around on those axes.
ggml_tensor* conv2d(Ctx& c, ggml_tensor* x, const std::string& prefix, int64_t in, int64_t out,
                    int k, int stride = 1, int pad = 0, bool bias = true);

// Pads x [W, H, C, N] by left/right columns and top/bottom rows: by wrap-around (the
// values from the other side) on the axes wrap_x / wrap_y, with zeros on the others.
ggml_tensor* pad_wrap(ggml_context* ctx, ggml_tensor* x, int left, int right, int top, int bottom,
                      bool wrap_x, bool wrap_y);
// pad_wrap with the axes of the module's seamless tiling: the explicit padding before an
// unpadded convolution (the VAE encoder's right/bottom downsample pad).
ggml_tensor* pad_conv_input(ggml_context* ctx, ggml_tensor* x, int left, int right, int top,
                            int bottom);

// The run-time adapters' contribution (see WeightAdapter) to a linear layer's output for
// weight `weight` (full name, "....weight") and input x [in, ...]; nullptr when it has none.
// Layers that use a weight through views (a fused projection split in halves) add it
// themselves.
ggml_tensor* linear_adapters(Ctx& c, ggml_tensor* x, const std::string& weight);

// GroupNorm over channels (ne[2]) with affine weight/bias; input [W, H, C, N].
ggml_tensor* group_norm(Ctx& c, ggml_tensor* x, const std::string& prefix, int64_t channels,
                        int groups = 32, float eps = 1e-6f);

// LayerNorm over ne[0] with affine weight/bias.
ggml_tensor* layer_norm(Ctx& c, ggml_tensor* x, const std::string& prefix, int64_t dim,
                        float eps = 1e-5f);

// Scaled dot-product attention. q [d*heads, Tq, N], k/v [d*heads, Tk, N] -> [d*heads, Tq, N].
// causal: query i sees keys 0..i only (CLIP text encoders). On the CPU kernels one fused
// op; elsewhere ggml's flash attention when the module chose it (kernel_choices.h), else
// plain products and softmax. key_mask (f32 [Tk, N], or null) is added to every query's
// scaled logits: 0 keeps a key, -inf hides it (padding masks; a batch item's own row).
// ggml_only: ggml's own products and softmax even where the CPU kernels could run (its
// products are named cpu::kGgmlOnlyProduct), for a text encoder whose output follows the
// reference engine's arithmetic closely only that way (LTX-2's Gemma 3: its cfg golden moved
// from 1.75 to 0.56).
ggml_tensor* attention(ggml_context* ctx, ggml_tensor* q, ggml_tensor* k, ggml_tensor* v, int heads,
                       bool causal = false, ggml_tensor* key_mask = nullptr,
                       bool ggml_only = false);

// Grouped-query attention's keys or values for every query head: [kv*d, T, N] ->
// [heads*d, T, N], each of the kv heads serving heads/kv query heads in turn.
ggml_tensor* expand_kv_heads(ggml_context* ctx, ggml_tensor* x, int64_t d, int64_t kv,
                             int64_t heads);

// Attention with an additive bias on the logits (T5's relative position bias): logits are
// q.k * scale + bias, bias [Tk, Tq, heads, 1] (broadcast over the batch), plus key_mask
// (f32 [Tk, N] or null) for every query as nn::attention adds it.
ggml_tensor* attention_biased(ggml_context* ctx, ggml_tensor* q, ggml_tensor* k, ggml_tensor* v,
                              int heads, ggml_tensor* bias, float scale,
                              ggml_tensor* key_mask = nullptr);

// [W, H, C, N] <-> [C, W*H, N] token layout.
ggml_tensor* image_to_tokens(ggml_context* ctx, ggml_tensor* x);
ggml_tensor* tokens_to_image(ggml_context* ctx, ggml_tensor* x, int64_t w, int64_t h);

// Nearest-neighbour 2x upsample of [W, H, C, N].
ggml_tensor* upsample_nearest2x(ggml_context* ctx, ggml_tensor* x);
// Nearest-neighbour resize of [W, H, C, N] to [w, h, C, N] (source pixel floor(i * W / w),
// torch's "nearest"); exactly upsample_nearest2x when w = 2W and h = 2H.
ggml_tensor* upsample_nearest(ggml_context* ctx, ggml_tensor* x, int64_t w, int64_t h);

}  // namespace ggdiff::nn
