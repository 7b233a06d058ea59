// Krea2's diffusion transformer, as stable-diffusion.cpp (38a51f81, krea2.hpp) runs it: one
// stream of single blocks over [text tokens, image tokens].
// - Text: the LLM's hidden states of several layers stacked on the feature axis
//   ([text_width * states, T]) pass the text fusion: each token's states are a sequence of
//   `states` vectors that two "layerwise" blocks attend over, a projector (a linear over the
//   states, no bias) folds them into one vector, and two "refiner" blocks attend over the
//   tokens. Both kinds are pre-RMSNorm attention + SwiGLU blocks with no RoPE and no mask.
//   Then txtmlp: RMSNorm, linear, GELU, linear to the width.
// - Image: 2x2 latent patches (channel, row, column) through the linear "first".
// - Time: 256 sinusoidal features of 1000 * sigma, tmlp (linear, GELU, linear) gives t;
//   tproj (GELU, linear) gives the six modulation vectors every block adds its own "mod.lin"
//   to: (scale, shift, gate) for attention and for the MLP, x += gate * f(norm(x) * (1 +
//   scale) + shift), gates without tanh.
// - Attention: q, k, v linears without bias (grouped-query: fewer key/value heads), per-head
//   RMSNorm of q and k, RoPE on interleaved pairs (theta 1000, 3 axes of head_dim - 12u, 6u, 6u
//   dims with u = head_dim / 16; text tokens at (0, 0, 0), image patches at (0, row, column)),
//   the output times sigmoid(gate(x)), then wo.
// - Every RMSNorm scales by (1 + scale), eps 1e-5.
// - last: RMSNorm modulated by its own two vectors (modulation.lin: scale and shift) plus t,
//   a linear back to patches; the image tokens are the flow velocity.
// Sizes come from the weights: width and channels (first), head size (q norm), heads and
// key/value heads (wq / wk rows), text width and head size, stacked states (projector), SwiGLU
// widths (mlp.gate), the depths.
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

struct Krea2Config {
    std::string prefix = "model.diffusion_model.";
    int patch = 2;
    int64_t channels = 16;
    int64_t width = 6144;
    int64_t head_dim = 128;
    int64_t heads = 48;
    int64_t kv_heads = 12;
    int64_t mlp = 16384;
    int64_t t_features = 256;   // sinusoidal timestep features (tmlp.0's input)
    int64_t text_width = 2560;  // the LLM's hidden size
    int64_t text_states = 12;   // LLM layers stacked per token (the projector's input)
    int64_t text_head_dim = 128;
    int64_t text_heads = 20;
    int64_t text_kv_heads = 20;
    int64_t text_mlp = 6912;
    int64_t layerwise_blocks = 2;
    int64_t refiner_blocks = 2;
    int64_t layers = 28;
    float theta = 1000.0f;
    float eps = 1e-5f;
    std::vector<int> axes_dim() const;
};

bool is_krea2(const TensorIndex& index, const std::string& prefix);
Result<Krea2Config> detect_krea2(const TensorIndex& index, const std::string& prefix);

// RoPE angles of [text tokens, grid_h x grid_w image patches]: cos and sin [1, head_dim/2, 1,
// tokens] (nn::rope_pairs' tables).
struct Krea2Rope {
    HostTensor cos, sin;
};
Krea2Rope krea2_rope(const Krea2Config& cfg, int64_t text, int64_t grid_h, int64_t grid_w);

// x [W, H, C, N] latent, timesteps [N] (sigma), context [text_width * text_states, T, N],
// cos / sin of krea2_rope -> flow velocity [W, H, C, N].
ggml_tensor* build_krea2(nn::Ctx& c, const Krea2Config& cfg, ggml_tensor* x, ggml_tensor* timesteps,
                         ggml_tensor* context, ggml_tensor* cos, ggml_tensor* sin);

// One single-stream block alone (bench): x [width, T, N], mods [6 * width, 1, N] (tproj's
// output), cos / sin for the T tokens.
ggml_tensor* build_krea2_block(nn::Ctx& c, const Krea2Config& cfg, int64_t index, ggml_tensor* x,
                               ggml_tensor* mods, ggml_tensor* cos, ggml_tensor* sin);

}  // namespace ggdiff::models

namespace ggdiff {

// The DiT as a family's denoiser; each conditioning's context is the stacked LLM states
// [text_width * text_states, T, 1].
class Krea2Denoiser : public Denoiser {
  public:
    static Result<std::unique_ptr<Krea2Denoiser>> create(const FamilyContext& ctx,
                                                         const ModuleDevices& where,
                                                         const models::Krea2Config& cfg);

    Result<HostTensor> run(const DenoiseBatch& batch) override;
    void end_phase() override { runner_->end_phase(); }
    ModuleRunner& runner() { return *runner_; }

  private:
    models::Krea2Config cfg_;
    std::unique_ptr<ModuleRunner> runner_;
};

}  // namespace ggdiff
