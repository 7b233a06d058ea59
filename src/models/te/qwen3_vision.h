// The Qwen3-VL vision tower (Boogu Image's and HiDream-O1-Image's reference images), computed
// as stable-diffusion.cpp 38a51f81 computes it: the image cut into patches (each repeated on a
// time axis of 2) in 2x2 merge units (models::qwen_vision_patches) embedded by a Conv3d with a
// bias, plus learned position embeddings (a square table bilinearly interpolated to the
// image's patch grid), transformer blocks (LayerNorm, fused q/k/v with biases, 2-D RoPE over
// (row, column), full attention, GELU MLP), then the merger: LayerNorm, 2x2 patches
// concatenated, linear, erf GELU, linear. One output row per 2x2 patches, in raster order.
// The Hugging Face tower's deepstack mergers (deepstack_merger_list.*) are not read: the
// reference adds nothing of them to the language model.
//
// Weights (HF / ComfyUI names) under "<...>visual.": patch_embed.proj.{weight,bias} (Conv3d,
// [width, 3, 2, p, p]) or patch_embed.proj.{0,1}.weight (two Conv2d, one per time step) with
// patch_embed.bias, pos_embed.weight [n*n, width], blocks.N.{norm1,norm2}.{weight,bias},
// blocks.N.attn.qkv.{weight,bias}, blocks.N.attn.proj.{weight,bias},
// blocks.N.mlp.linear_fc{1,2}.{weight,bias}, merger.norm.{weight,bias},
// merger.linear_fc{1,2}.{weight,bias}.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/host_tensor.h"
#include "core/status.h"
#include "io/tensor_index.h"
#include "nn/weights.h"

namespace ggdiff::models {

struct Qwen3VisionConfig {
    std::string prefix;  // the tower's names start with it, e.g. "text_encoders.llm.visual."
    int64_t width = 1152, heads = 16, layers = 0, mlp = 0, out_dim = 0;
    int64_t grid_side = 0;  // the position table is grid_side x grid_side
    int patch = 16, temporal_patch = 2, merge = 2;
    bool split_patch_embed = false;  // patch_embed.proj.{0,1} (Conv2d) instead of the Conv3d
    float eps = 1e-6f;
    float rope_theta = 10000.0f;

    int64_t head_dim() const { return width / heads; }
    int factor() const { return patch * merge; }  // image sides are multiples of it
};

// Whether a Qwen3-VL tower (its position table "visual.pos_embed.weight") is under `prefix`
// (the tower's own prefix or any prefix above it, e.g. "text_encoders.llm.").
bool has_qwen3_vision(const TensorIndex& index, const std::string& prefix);

// Sizes from the weights: blocks = highest blocks.N + 1, width and patch size from the patch
// embedding, position grid from pos_embed, MLP width from blocks.0.mlp.linear_fc1, output
// width from merger.linear_fc2; heads (16) and the 2x2 merge are fixed, as in the reference.
// Errors name the first missing or mis-shaped tensor.
Result<Qwen3VisionConfig> detect_qwen3_vision(const TensorIndex& index, const std::string& prefix);

// The tower's host-side inputs for one image of grid_w x grid_h patches (tokens in the
// patches' order: merge units in raster order, the 2x2 patches of each in raster order).
struct Qwen3VisionInputs {
    int64_t grid_w = 0, grid_h = 0;  // patches
    HostTensor patches;              // [3 * temporal_patch * patch^2, tokens]
    // Bilinear position embedding: for each token, the four table rows around its place on
    // the grid_side x grid_side table (top left, top right, bottom left, bottom right) and
    // their weights ([1, tokens] each).
    std::array<std::vector<int32_t>, 4> pos_rows;
    std::array<HostTensor, 4> pos_weights;
    HostTensor cos, sin;  // [head_dim / 2, 1, tokens]

    int64_t tokens() const { return grid_w * grid_h; }
    int64_t outputs() const { return tokens() / 4; }  // merge units (2x2)
};

// `pixels` [W, H, 3]: the preprocessed image, W and H multiples of cfg.factor().
Result<Qwen3VisionInputs> qwen3_vision_inputs(const Qwen3VisionConfig& cfg,
                                              const HostTensor& pixels);

// patches, the four position row indices [tokens] (i32) and weights, cos, sin as given by
// qwen3_vision_inputs (their ggml inputs) -> [out_dim, outputs], rows in raster order of the
// merge units.
ggml_tensor* build_qwen3_vision(nn::Ctx& c, const Qwen3VisionConfig& cfg, ggml_tensor* patches,
                                const std::array<ggml_tensor*, 4>& pos_rows,
                                const std::array<ggml_tensor*, 4>& pos_weights, ggml_tensor* cos,
                                ggml_tensor* sin);

}  // namespace ggdiff::models
