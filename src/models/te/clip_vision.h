// CLIP vision transformer (OpenCLIP ViT-H/14 for Wan 2.1 image-to-video, and the other CLIP
// ViTs of the same shape) in the HF CLIPVisionModel layout under a prefix such as
// "clip_vision.vision_model." (ComfyUI's clip_vision_h.safetensors; open_clip's "visual.*"
// names are renamed to it when the file is read, io/name_map.h).
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "io/tensor_index.h"
#include "nn/weights.h"

namespace ggdiff::models {

struct ClipVisionConfig {
    std::string prefix;  // up to and including "vision_model."
    int64_t width = 1280;
    int64_t layers = 32;
    int64_t heads = 16;
    int64_t intermediate = 5120;
    int64_t patch = 14;
    int64_t image_size = 224;  // the square input the position table was made for
    int64_t positions = 257;   // (image_size / patch)^2 patches + the class token
    // The MLP's activation, chosen by width as the reference engine does: exact GELU for
    // the 1024- and 1280-wide towers (ViT-L/14, ViT-H/14), quick GELU for any other.
    bool quick_gelu = false;

    // The encoder layers' prefixes, in order (for layer split).
    std::vector<std::string> layer_prefixes() const;
};

// Whether `prefix` (a role prefix such as "clip_vision.", or the tower's own) holds a CLIP
// vision tower.
bool has_clip_vision(const TensorIndex& index, const std::string& prefix);

// Reads the architecture from the weights under `prefix` (the role prefix, or the tower's own
// ending in "vision_model."): every tensor the tower reads is checked, and the error names the
// first missing or mis-shaped one. Heads: width / 64 up to 1024 wide (ViT-B, ViT-L), 16 above
// (ViT-H's 80-wide heads, bigG's 104), as the reference engine has them.
Result<ClipVisionConfig> detect_clip_vision(const TensorIndex& index, const std::string& prefix);

// pixels f32 [image_size, image_size, 3, 1] (CLIP-normalized) -> hidden states
// [width, positions, 1] after the first `layers_to_run` encoder layers (clamped to 1..layers):
// patch convolution (no bias), the class token in front, position embeddings, pre-layernorm,
// then the layers. No post-layernorm: see ClipVisionEncoder for why.
ggml_tensor* build_clip_vision(nn::Ctx& c, const ClipVisionConfig& cfg, ggml_tensor* pixels,
                               int64_t layers_to_run);

}  // namespace ggdiff::models
