// MiniT2I's diffusion network (MMJiT), as stable-diffusion.cpp (38a51f81, minit2i.hpp) runs it:
// a pixel-space DiT that predicts the clean image from the noisy one and never sees the time.
// - The RGB image [-1, 1] is cut into 16x16 patches by a bottleneck embedder (img_embedder:
//   proj1 a 16x16 stride-16 convolution to 128 channels without bias, proj2 a 1x1 convolution
//   to the width) plus a fixed 2-D sin-cos position embedding of the patch grid.
// - The prompt: T5 states [1024, 256] whose padding is replaced by the learned mask_token
//   (the unconditional side masks every token), embedded by txt_embedder (no bias), then the
//   txt_preamble_blocks: pre-RMSNorm self-attention (fused qkv with bias, per-head q/k RMSNorm,
//   RoPE over the text positions) and a SwiGLU MLP (w2(silu(w1 x) * w3 x)).
// - double_blocks: each stream (image, text) keeps its own norms, qkv, projection and SwiGLU
//   MLP; they attend jointly ([text, image], q/k RMSNorm shared by the streams). RoPE (theta
//   10000) turns the pairs (x[i], x[i + d/2]) of each head (the reference's non-interleaved
//   form): a text token by its position on every pair, an image token by its row on the first
//   half of the pairs and by its column on the second.
// - final_layer: RMSNorm and a linear to 16x16x3 values per patch (channel fastest).
// t_embedder and pooled_embedder are in the files but unused (as in the reference).
// Sizes come from the weights: width (img_embedder.proj2), text width (txt_embedder),
// heads (768 wide: 12 of 64; 1248: 24 of 52; else heads of 64), depths, MLP widths.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/host_tensor.h"
#include "core/status.h"
#include "io/tensor_index.h"
#include "nn/weights.h"
#include "pipeline/family.h"
#include "runtime/module_runner.h"

namespace ggdiff::models {

struct MiniT2IConfig {
    std::string prefix = "model.diffusion_model.model.net.";
    int patch = 16;
    int64_t channels = 3;
    int64_t bottleneck = 128;  // img_embedder.proj1's output channels
    int64_t width = 768;
    int64_t text_input = 1024;  // the T5 width
    int64_t text_width = 768;
    int64_t heads = 12;
    int64_t head_dim = 64;
    int64_t depth = 17;      // double_blocks
    int64_t text_depth = 2;  // txt_preamble_blocks
    int64_t mlp = 2048;      // the image stream's SwiGLU width
    int64_t text_mlp = 2048;
    int64_t inner() const { return heads * head_dim; }
};

bool is_minit2i(const TensorIndex& index, const std::string& prefix);
Result<MiniT2IConfig> detect_minit2i(const TensorIndex& index, const std::string& prefix);

// RoPE angles of the joint sequence [text tokens, grid_h x grid_w image tokens] (or text
// alone with grid 0 x 0): cos and sin [head_dim/2, 1, tokens, 1] (pair i of a head is its
// values i and i + head_dim/2).
struct MiniT2IRope {
    HostTensor cos, sin;
};
MiniT2IRope minit2i_rope(const MiniT2IConfig& cfg, int64_t text, int64_t grid_h, int64_t grid_w);
// The 2-D sin-cos position embedding [width, grid_h * grid_w] of the patch grid.
HostTensor minit2i_pos_embed(const MiniT2IConfig& cfg, int64_t grid_h, int64_t grid_w);

// x [W, H, 3, N] pixels (multiples of the patch), context [text_input, T, N] T5 states, keep
// [1, T, N] (1 prompt token, 0 masked), pos [width, tokens], the text and joint RoPE -> the
// predicted clean image [W, H, 3, N].
struct MiniT2IInputs {
    ggml_tensor *x, *context, *keep, *pos;
    ggml_tensor *text_cos, *text_sin, *joint_cos, *joint_sin;
};
ggml_tensor* build_minit2i(nn::Ctx& c, const MiniT2IConfig& cfg, const MiniT2IInputs& in);

// One double block alone (bench): img [width, Ti, N], txt [text_width, Tt, N].
ggml_tensor* build_minit2i_double_block(nn::Ctx& c, const MiniT2IConfig& cfg, int64_t index,
                                        ggml_tensor* img, ggml_tensor* txt, ggml_tensor* cos,
                                        ggml_tensor* sin);

}  // namespace ggdiff::models

namespace ggdiff {

// The DiT as a family's denoiser. Each conditioning's context is its T5 states
// [text_input, T, 1] and its pooled vector the prompt mask [T] (1 kept, 0 masked).
class MiniT2IDenoiser : public Denoiser {
  public:
    static Result<std::unique_ptr<MiniT2IDenoiser>> create(const FamilyContext& ctx,
                                                           const ModuleDevices& where,
                                                           const models::MiniT2IConfig& cfg);

    // batch.x [w, h, 3, n] pixels -> the predicted clean images.
    Result<HostTensor> run(const DenoiseBatch& batch) override;
    void end_phase() override { runner_->end_phase(); }
    ModuleRunner& runner() { return *runner_; }

  private:
    models::MiniT2IConfig cfg_;
    std::unique_ptr<ModuleRunner> runner_;
};

}  // namespace ggdiff
