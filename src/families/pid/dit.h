// PiD's diffusion network (NVIDIA's Pixel Diffusion Decoder, a PixelDiT), as stable-diffusion.cpp
// (38a51f81, pid.hpp) runs it. It denoises the RGB image itself, conditioned on the text and on
// the VAE latent of a source image (the -r reference):
// - patch level: the image in 16x16 patches (s_embedder, a linear on (channel, row, column)
//   features) goes through patch_blocks, MMDiT blocks with a text stream (y_embedder: linear
//   and RMSNorm of the Gemma states, plus the learned y_pos_embedding): RMSNorm, adaLN
//   x + x * scale + shift from silu(t_emb), joint attention [text, image] with per-head q/k
//   RMSNorm and RoPE on interleaved pairs, SwiGLU MLPs (w2(silu(w1 x) * w3 x)), gated
//   residuals. RoPE: text token j at angle j * 10000^(-2p/d) on pair p; image patch (row, col)
//   on a grid normalized to [0, 16] (scaled by 16 / (side - 1)), even pairs turning with the
//   column and odd ones with the row, theta 10000 stretched by (side / 64)^(a / (a - 2))
//   (NTK; a = d / 2) on each axis.
// - the source latent: nearest-resized to the patch grid, lq_proj.latent_proj (3x3 conv,
//   SiLU, 3x3 conv, 4 residual blocks of GroupNorm(4)-SiLU-conv twice) and one output head per
//   pair of patch blocks; before block 2i the patch tokens gain sigmoid(content_proj([s, lq]) -
//   exp(log_alpha) * degrade_sigma) * lq (degrade_sigma is 0, as in the reference).
// - pixel level: after the patch blocks s = silu(s + t_emb) conditions pixel_blocks: every
//   pixel embedded to 16 features (pixel_embedder plus a fixed sin-cos position of its x and
//   y), per patch adaLN from s (6 x 16 per pixel), the patch's 256 pixels compressed to 1152
//   features for attention between patches (RoPE as above on heads of 72), expanded back, and a
//   GELU MLP per pixel; final_layer: RMSNorm and a linear to RGB.
// - the timestep t (1000 sigma) embedded with 256 sinusoidal features of max period 10 (cos
//   half first) through t_embedder.mlp.
// Sizes come from the weights (widths, depths, heads from the q-norm sizes, latent channels);
// images are padded to the patch and the output cropped back.
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

struct PidConfig {
    std::string prefix = "model.diffusion_model.net.";
    int patch = 16;
    int64_t channels = 3;
    int64_t hidden = 1536;
    int64_t heads = 24;
    int64_t mlp = 4096;
    int64_t pixel_hidden = 16;
    int64_t pixel_attn = 1152;
    int64_t pixel_heads = 16;
    int64_t patch_depth = 14;
    int64_t pixel_depth = 2;
    int64_t text_width = 2304;  // the Gemma states
    int64_t text_max = 300;     // y_pos_embedding rows
    int64_t lq_channels = 16;   // the source latent's channels
    int64_t lq_hidden = 512;
    int64_t lq_res_blocks = 4;
    int64_t lq_outputs = 7;   // output_heads / gate_modules
    int64_t lq_interval = 2;  // a gate before every lq_interval-th patch block
    int rope_ref_grid = 64;
    int64_t head_dim() const { return hidden / heads; }
    int64_t pixel_head_dim() const { return pixel_attn / pixel_heads; }
};

bool is_pid(const TensorIndex& index, const std::string& prefix);
Result<PidConfig> detect_pid(const TensorIndex& index, const std::string& prefix);

// RoPE angles as cos and sin [1, d/2, 1, tokens] (rope_pairs' tables).
struct PidRope {
    HostTensor cos, sin;
};
// The patch grid's (gh x gw tokens, row-major) for heads of d.
PidRope pid_grid_rope(const PidConfig& cfg, int64_t gh, int64_t gw, int64_t d);
// Text positions 0..tokens-1 for heads of d.
PidRope pid_text_rope(int64_t tokens, int64_t d);
// The timesteps' 256 sinusoidal features (max period 10, cos half first): [256, N].
HostTensor pid_time_features(const std::vector<float>& t);
// [tokens, grid] joined on the token axis.
PidRope pid_concat(const PidRope& a, const PidRope& b);
// The pixels' fixed position features [pixel_hidden, w * h] (row-major).
HostTensor pid_pixel_pos(const PidConfig& cfg, int64_t w, int64_t h);

struct PidInputs {
    ggml_tensor* x;                      // [W, H, 3, N], W and H multiples of the patch
    ggml_tensor* t;                      // [N] timesteps
    ggml_tensor* context;                // [text_width, T, N]
    ggml_tensor* lq;                     // [w, h, lq_channels, 1] the source latent
    ggml_tensor *joint_cos, *joint_sin;  // text then patch grid, heads of head_dim()
    ggml_tensor *grid_cos, *grid_sin;    // patch grid, heads of pixel_head_dim()
    ggml_tensor* pixel_pos;              // [pixel_hidden, W * H]
};
// -> the velocity [W, H, 3, N].
ggml_tensor* build_pid(nn::Ctx& c, const PidConfig& cfg, const PidInputs& in);

// One patch block alone (bench): s [hidden, L, N], y [hidden, T, N], cond [hidden, 1, N].
ggml_tensor* build_pid_patch_block(nn::Ctx& c, const PidConfig& cfg, int64_t index, ggml_tensor* s,
                                   ggml_tensor* y, ggml_tensor* cond, ggml_tensor* cos,
                                   ggml_tensor* sin);

}  // namespace ggdiff::models

namespace ggdiff {

// The DiT as a family's denoiser: batch.x the noisy images [w, h, 3, n], batch.refs the first
// reference's latent (required), each conditioning's context the Gemma states.
class PidDenoiser : public Denoiser {
  public:
    static Result<std::unique_ptr<PidDenoiser>> create(const FamilyContext& ctx,
                                                       const ModuleDevices& where,
                                                       const models::PidConfig& cfg);
    Result<HostTensor> run(const DenoiseBatch& batch) override;
    void end_phase() override { runner_->end_phase(); }
    ModuleRunner& runner() { return *runner_; }

  private:
    models::PidConfig cfg_;
    std::unique_ptr<ModuleRunner> runner_;
};

}  // namespace ggdiff
