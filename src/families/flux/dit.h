// The FLUX.1 diffusion transformer (dev, schnell and same-layout variants) in the original
// single-file naming under a prefix such as "model.diffusion_model.": img_in, txt_in,
// time_in, guidance_in (dev only), vector_in, double_blocks.{i} (img/txt streams with
// joint attention), single_blocks.{i} (one fused stream), final_layer. Latents are
// patched 2x2 into tokens (padded to even sizes first and cropped after), positions
// enter through RoPE over three axes (16/56/56 of each 128-wide head, theta 10000), and
// the timestep, distilled guidance and pooled text vector modulate every block (adaLN).
// Numerics follow stable-diffusion.cpp's flux.hpp, which made the golden images.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/host_tensor.h"
#include "core/status.h"
#include "io/tensor_index.h"
#include "nn/dit.h"
#include "nn/weights.h"

namespace ggdiff::models {

struct FluxConfig {
    std::string prefix = "model.diffusion_model.";
    int64_t in_channels = 64;   // patched latent features (16 channels * 2 * 2)
    int64_t out_channels = 64;  // patched output features
    int64_t hidden = 3072;
    int64_t heads = 24;
    int64_t head_dim = 128;
    int64_t mlp_hidden = 12288;
    int64_t context_dim = 4096;  // T5 width
    int64_t vec_in_dim = 768;    // CLIP-L pooled width (0: no vector_in)
    int depth = 19;              // double blocks
    int depth_single = 38;       // single blocks
    bool guidance_embed = true;  // dev: guidance_in present; schnell: absent
    bool qkv_bias = true;
    // diffusers layout (families/flux/names.cpp): separate q/k/v (and a single block's mlp_in),
    // final modulation stored (scale, shift) as final_layer.adaLN_scale_shift.
    bool split_qkv = false;
    bool final_scale_first = false;
    // Chroma: no time_in / vector_in / guidance_in or per-block modulation linears, every
    // modulation vector comes from distilled_guidance_layer (families/chroma).
    bool approximator = false;
    // Chroma1-Radiance: pixels enter through the img_in_patch convolution (patch 16, 3
    // channels) and leave through a pixel head instead of final_layer.
    bool pixel_patch_in = false;
    // LongCat-Image's RoPE ids (families/longcat): text token i at (0, i, i), the image at index
    // 1 and references from index 2, their rows and columns offset by the text length.
    bool longcat_positions = false;
    // Ovis-Image (families/ovis): SwiGLU MLPs (a double block's img_mlp / txt_mlp as gate_proj,
    // up_proj, down_proj: down(silu(gate(x)) * up(x)); a single block's linear1 carries 2x the
    // MLP width, value then gate), an RMSNorm (txt_norm.scale) on the text before txt_in, and text
    // token i at (0, i, i) (the image where FLUX.1 puts it).
    bool swiglu_mlp = false;
    bool txt_norm = false;
    bool diagonal_text_ids = false;
    int patch = 2;
    float theta = 10000.0f;
    std::vector<int> axes_dim{16, 56, 56};

    int64_t latent_channels() const { return in_channels / (patch * patch); }
};

// Reads the architecture from the weights under cfg.prefix (FLUX.1 and the Chroma layouts);
// errors name the first missing or mis-shaped tensor.
Result<FluxConfig> detect_flux(const TensorIndex& index,
                               const std::string& prefix = "model.diffusion_model.");

struct FluxIdentity;  // PuLID-FLUX's identity (families/flux/pulid.h)

// The RoPE angles for `text_tokens` text tokens (positions 0) followed by the image tokens
// of a latent of w x h pixels (patch grid ceil(h/2) x ceil(w/2), positions (0, row, col)),
// then the tokens of each reference latent (Kontext editing), as stable-diffusion.cpp places
// them: by default every reference at index 1, the first at row/column 0 and each next one
// below or to the right of those before it (whichever keeps the layout squarer; the offsets
// are counted in latent pixels, not patches); with `increase_ref_index` reference k at index
// k, all at row/column 0. With `wrap` (seamless tiling) the image's and each reference's
// rows / columns wrap around on the size of their own patch grid (text tokens never wrap).
// With cfg.longcat_positions the ids follow LongCat's scheme instead, with cfg.diagonal_text_ids
// (Ovis-Image) text token i sits at (0, i, i) (see FluxConfig).
// cos and sin, each [1, head_dim/2, 1, tokens].
struct FluxPositions {
    HostTensor cos, sin;
};
using FluxRefSize = std::pair<int64_t, int64_t>;  // (width, height) of a reference latent
FluxPositions flux_positions(const FluxConfig& cfg, int64_t latent_w, int64_t latent_h,
                             int64_t text_tokens, const std::vector<FluxRefSize>& refs = {},
                             bool increase_ref_index = false, nn::RopeWrap wrap = {});

// x [W, H, C, N] (any W, H), timesteps [N] (sigma in [0, 1]), context [context_dim, L, N],
// y [vec_in_dim, N] (pooled text), guidance [N] (dev; ignored without guidance_embed),
// pe from flux_positions(W, H, L, ref sizes) -> flow prediction [W, H, C, N]. refs: reference
// latents [w, h, C, 1] (Kontext), patched like the image and joined after its tokens, shared
// by the batch. `skip` (skip-layer guidance; null or empty: none) lists blocks that pass
// their inputs through unchanged: double block i is number i, single block i is number
// depth + i. `identity` (PuLID-FLUX; null: none) is injected between the blocks.
ggml_tensor* build_flux(nn::Ctx& c, const FluxConfig& cfg, ggml_tensor* x, ggml_tensor* timesteps,
                        ggml_tensor* context, ggml_tensor* y, ggml_tensor* guidance,
                        ggml_tensor* pe_cos, ggml_tensor* pe_sin,
                        const std::vector<int>* skip = nullptr,
                        const std::vector<ggml_tensor*>& refs = {},
                        const FluxIdentity* identity = nullptr);

// The pieces build_flux is made of, for the FLUX-layout variants that modulate or decode
// differently (Chroma).
//
// x [W, H, C, N] padded and patched (the reference latents' tokens after the image's), then
// img_in -> [hidden, tokens, N].
ggml_tensor* flux_image_tokens(nn::Ctx& c, const FluxConfig& cfg, ggml_tensor* x,
                               const std::vector<ggml_tensor*>& refs = {});
// context [context_dim, L, 1 or n] through txt_in -> [hidden, L, n].
ggml_tensor* flux_text_tokens(nn::Ctx& c, const FluxConfig& cfg, ggml_tensor* context, int64_t n);

// The modulation vectors of a block, each [hidden, 1, N or 1]: a double block's stream gets
// six (shift, scale, gate of the attention, then of the MLP), a single block three.
using FluxMods = std::vector<ggml_tensor*>;
enum class FluxModSite { DoubleImg, DoubleTxt, Single };
using FluxModSource = std::function<FluxMods(FluxModSite site, int block)>;

// The double and single blocks: img [hidden, Ti, N], txt [hidden, Tt, N] -> the outputs of
// the Ti image (and reference) tokens [hidden, Ti, N]. pe covers Tt + Ti tokens; key_mask
// (f32 [Tt + Ti, N] or null) is added to every attention's logits; skip and identity as
// build_flux.
ggml_tensor* flux_blocks(nn::Ctx& c, const FluxConfig& cfg, ggml_tensor* img, ggml_tensor* txt,
                         const FluxModSource& mods, ggml_tensor* pe_cos, ggml_tensor* pe_sin,
                         ggml_tensor* key_mask = nullptr, const std::vector<int>* skip = nullptr,
                         const FluxIdentity* identity = nullptr);

// LayerNorm, modulate(shift, scale), final_layer.linear -> [out_channels, T, N].
ggml_tensor* flux_final_layer(nn::Ctx& c, const FluxConfig& cfg, ggml_tensor* img,
                              ggml_tensor* shift, ggml_tensor* scale);

}  // namespace ggdiff::models
