// The Qwen2.5-VL vision tower (Qwen Image Edit's reference images), computed as
// stable-diffusion.cpp 38a51f81 computes it: the image cut into 14x14 patches (each repeated
// on a time axis of 2) embedded by a Conv3d, transformer blocks (RMSNorm, fused or split
// q/k/v with biases, 2-D RoPE over (row, column), SiLU-gated MLP) that attend inside windows
// of 8x8 patches except the full-attention blocks, then the merger: RMSNorm, 2x2 patches
// concatenated, linear, tanh GELU, linear. One output row per 2x2 patches, in raster order.
//
// Weights (HF / ComfyUI names) under "<...>visual.": patch_embed.proj.weight (Conv3d,
// [width, 3, 2, 14, 14], no bias) or patch_embed.proj.{0,1}.weight (two Conv2d, one per time
// step), blocks.N.{norm1,norm2}.weight, blocks.N.attn.qkv.{weight,bias} or
// blocks.N.attn.{q,k,v}_proj.{weight,bias}, blocks.N.attn.proj.{weight,bias},
// blocks.N.mlp.{gate,up,down}_proj.{weight,bias}, merger.ln_q.weight,
// merger.mlp.{0,2}.{weight,bias}.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/host_tensor.h"
#include "core/status.h"
#include "io/tensor_index.h"
#include "nn/weights.h"

namespace ggdiff::models {

struct QwenVisionConfig {
    std::string prefix;  // the tower's names start with it, e.g. "text_encoders.llm.visual."
    int64_t width = 1280, heads = 16, layers = 0, mlp = 0, out_dim = 0;
    int patch = 14, temporal_patch = 2, merge = 2, window = 112;  // window in pixels
    std::vector<int> full_attention_blocks{7, 15, 23, 31};
    bool split_qkv = false;          // attn.{q,k,v}_proj instead of attn.qkv
    bool split_patch_embed = false;  // patch_embed.proj.{0,1} (Conv2d) instead of the Conv3d
    float eps = 1e-6f;
    float rope_theta = 10000.0f;

    int64_t head_dim() const { return width / heads; }
    bool full_attention(int block) const;
};

// Whether a vision tower's patch embedding is under `prefix` (the tower's own prefix or any
// prefix above it, e.g. the LLM's role prefix "text_encoders.llm.").
bool has_qwen_vision(const TensorIndex& index, const std::string& prefix);

// Sizes from the weights: blocks = highest blocks.N + 1, width from the patch embedding, MLP
// width from blocks.0.mlp.gate_proj, output width from merger.mlp.2; heads (16), patch (14),
// merge (2x2), windows (112 px) and the full-attention blocks (7, 15, 23, 31) are fixed, as in
// the reference. Errors name the first missing or mis-shaped tensor.
Result<QwenVisionConfig> detect_qwen_vision(const TensorIndex& index, const std::string& prefix);

// The size (w_bar, h_bar) an image of width x height is resized to before the tower (Qwen's
// smart resize, as the reference's edit conditioner computes it): both sides multiples of
// 28 (patch * merge) near the image's, the area brought into [384^2, 560^2].
std::pair<int, int> qwen_vision_size(int width, int height, const QwenVisionConfig& cfg);

// The tower's host-side inputs for one image of grid_w x grid_h patches.
//
// The blocks run on the tokens in window order: the windows (each a run of whole 2x2 merge
// units) follow one another, grouped by size: every full window first, then the narrower
// windows of the right edge, the shorter ones of the bottom edge, the corner (the reference
// keeps the windows in raster order and masks the attention; attention inside a window does
// not depend on where the window sits in the sequence, so both give the same rows).
struct QwenVisionWindows {
    int64_t first = 0;    // first token (patch) of the run
    int64_t count = 0;    // windows in the run
    int64_t patches = 0;  // patches per window
};

struct QwenVisionInputs {
    int64_t grid_w = 0, grid_h = 0;  // patches
    // [3 * temporal_patch * patch * patch, grid_w * grid_h]: one row per patch in the
    // reference's order (merge units in raster order, the 2x2 patches of each in raster
    // order), features ordered (channel, time, row, column) like the Conv3d kernel.
    HostTensor patches;
    std::vector<int32_t> window_index;   // window-order merge unit -> raster merge unit
    std::vector<int32_t> inverse_index;  // raster merge unit -> window-order position
    HostTensor cos, sin;                 // [head_dim / 2, 1, tokens], tokens in window order
    std::vector<QwenVisionWindows> windows;

    int64_t tokens() const { return grid_w * grid_h; }
    int64_t outputs() const { return static_cast<int64_t>(window_index.size()); }  // merge units
};

// The patches of `pixels` [W, H, 3] (sides multiples of patch * merge) in the reference's
// order: merge units (merge x merge patches) in raster order, the patches of each in raster
// order, one row per patch of features ordered (channel, time, row, column) like a Conv3d
// kernel, the image repeated on the time axis -> [3 * temporal * patch^2, patches]. Shared by
// the Qwen2.5-VL and Qwen3-VL towers.
HostTensor qwen_vision_patches(const HostTensor& pixels, int64_t patch, int64_t temporal,
                               int64_t merge);

// `pixels` [W, H, 3] (or [W, H, 3, 1]): the preprocessed image (CLIP-normalized), W and H
// multiples of patch * merge.
Result<QwenVisionInputs> qwen_vision_inputs(const QwenVisionConfig& cfg, const HostTensor& pixels);

// patches, window_index, inverse_index [outputs] (i32), cos, sin as given by
// qwen_vision_inputs (their ggml inputs) -> [out_dim, outputs], rows in raster order of the
// merge units.
ggml_tensor* build_qwen_vision(nn::Ctx& c, const QwenVisionConfig& cfg, const QwenVisionInputs& in,
                               ggml_tensor* patches, ggml_tensor* window_index,
                               ggml_tensor* inverse_index, ggml_tensor* cos, ggml_tensor* sin);

}  // namespace ggdiff::models
