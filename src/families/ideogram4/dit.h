// Ideogram 4's diffusion transformer, as stable-diffusion.cpp (38a51f81, ideogram4.hpp) runs it:
// one stream of identical layers over [text tokens, image tokens].
// - Text: the LLM's hidden states after 13 of its layers, stacked per token on the feature
//   axis ([text_width * 13, T]), interleaved (feature h of state l goes to h * 13 + l), RMSNorm
//   (llm_cond_norm, eps 1e-6) and a linear (llm_cond_proj) to the width.
// - Image: the FLUX.2 latent's 128 channels per token (channel order (ae, row, column) becomes
//   (row, column, ae)) through input_proj. Every token adds embed_image_indicator's row 0
//   (text) or 1 (image).
// - Time: the model's time 1000 - 1000 sigma, times 10, in width sinusoidal features (sine half
//   first, max period 10000), mlp_in, SiLU, mlp_out; adaln = SiLU(adaln_proj(that)).
// - A layer: mod = adaln_modulation(adaln) gives (scale, gate, scale, gate) for attention and
//   the MLP; x += tanh(gate) * norm2(f(norm1(x) * (1 + scale))), every norm an RMSNorm (eps
//   1e-5). Attention: a fused qkv linear without bias, per-head RMSNorm of q and k, RoPE on the
//   two halves of each head with Qwen3-VL's interleaved multimodal sections (24, 20, 20 of the
//   head's pairs: frequency j < 60 turns with position axis j % 3, the rest with axis 0; theta
//   5e6; text token i at (i, i, i), image patch (y, x) at (65536, 65536 + y, 65536 + x)),
//   o without bias. The MLP is SwiGLU (w2(silu(w1 x) * w3 x)).
// - final_layer: LayerNorm without affine (eps 1e-6) times 1 + adaln_modulation(SiLU(adaln)),
//   a linear back to 128 channels; the image tokens, negated, are the flow velocity.
// The unconditional pass runs with no text tokens at all (on the --uncond-diffusion-model DiT
// when one is given).
// Sizes come from the weights: width and latent channels (input_proj), head size (norm_q),
// MLP (w1), adaLN width (adaln_proj), text features (llm_cond_norm: 13 states), the depth.
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

struct Ideogram4Config {
    std::string prefix = "model.diffusion_model.";
    int64_t width = 4608;
    int64_t head_dim = 256;
    int64_t heads = 18;
    int64_t mlp = 12288;
    int64_t adaln = 512;
    int64_t channels = 128;    // latent channels (FLUX.2: 32 packed 2x2)
    int64_t text_states = 13;  // LLM states stacked per token
    int64_t text_width = 4096;
    int64_t layers = 34;
    float theta = 5000000.0f;
    float eps = 1e-5f;
};

// The LLM states Ideogram 4 stacks: the outputs of these layers (0-based), 13 of them.
std::vector<int> ideogram4_llm_layers();

bool is_ideogram4(const TensorIndex& index, const std::string& prefix);
Result<Ideogram4Config> detect_ideogram4(const TensorIndex& index, const std::string& prefix);

// RoPE angles of [text tokens, grid_h x grid_w image patches] as rope_halves takes them: cos
// and sin [head_dim/2, 1, tokens, 1].
struct Ideogram4Rope {
    HostTensor cos, sin;
};
Ideogram4Rope ideogram4_rope(const Ideogram4Config& cfg, int64_t text, int64_t grid_h,
                             int64_t grid_w);

// x [W, H, channels, 1] latent (W, H the patch grid), time [1] (the model's time, 1000 -
// 1000 sigma), context [text_width * 13, T, 1] or null (the unconditional pass), indicator
// [T + W*H] i32 (0 text, 1 image), cos / sin of ideogram4_rope -> flow velocity [W, H,
// channels, 1].
ggml_tensor* build_ideogram4(nn::Ctx& c, const Ideogram4Config& cfg, ggml_tensor* x,
                             ggml_tensor* time, ggml_tensor* context, ggml_tensor* indicator,
                             ggml_tensor* cos, ggml_tensor* sin);

// One layer alone (bench): x [width, T, 1], adaln [adaln, 1, 1], cos / sin for T tokens.
ggml_tensor* build_ideogram4_layer(nn::Ctx& c, const Ideogram4Config& cfg, int64_t index,
                                   ggml_tensor* x, ggml_tensor* adaln, ggml_tensor* cos,
                                   ggml_tensor* sin);

}  // namespace ggdiff::models

namespace ggdiff {

// The DiT (and the optional unconditional DiT) as a family's denoiser. A conditioning with
// text states [text_width * 13, T, 1] runs the DiT on them; one with no tokens is the
// unconditional pass: the unconditional DiT when there is one, else the DiT, without text.
class Ideogram4Denoiser : public Denoiser {
  public:
    // `uncond`: the unconditional DiT's config, or null when none was given.
    static Result<std::unique_ptr<Ideogram4Denoiser>> create(const FamilyContext& ctx,
                                                             const ModuleDevices& where,
                                                             const models::Ideogram4Config& cfg,
                                                             const models::Ideogram4Config* uncond);

    Result<HostTensor> run(const DenoiseBatch& batch) override;
    void end_phase() override;
    ModuleRunner& runner() { return *runner_; }
    ModuleRunner* uncond_runner() { return uncond_runner_.get(); }

  private:
    Result<HostTensor> run_one(const HostTensor& x, float sigma_time, const HostTensor* context);

    models::Ideogram4Config cfg_, uncond_cfg_;
    std::unique_ptr<ModuleRunner> runner_;
    std::unique_ptr<ModuleRunner> uncond_runner_;
};

}  // namespace ggdiff
