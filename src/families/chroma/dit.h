// The Chroma diffusion transformer: FLUX.1's double and single blocks (families/flux/dit.h)
// without any per-block modulation linear. A small MLP stack, distilled_guidance_layer (the
// "approximator": in_proj, 5 residual RMSNorm + MLP layers 5120 wide, out_proj), turns 344
// rows of sinusoidal features of (timestep, guidance 0, row index) into 344 modulation
// vectors: single block i reads rows 3i..3i+2, double block i rows 114+6i.. (image stream) and
// 228+6i.. (text stream), the final layer rows 342 (shift) and 343 (scale). Those offsets are
// stable-diffusion.cpp's constants for Chroma's 19 double and 38 single blocks, kept for any
// depth as the reference does. An additive key mask over [text, image] tokens hides T5's
// padding (all but the first --chroma-t5-mask-pad pads) in every attention.
// Chroma1-Radiance patches pixels instead of latents and decodes with a pixel head
// (families/chroma/radiance.h).
#pragma once

#include <string>
#include <vector>

#include "families/chroma/radiance.h"
#include "families/flux/dit.h"

namespace ggdiff::models {

constexpr int kChromaModRows = 344;

struct ChromaConfig {
    FluxConfig flux;              // blocks, widths, RoPE (flux.approximator is set)
    int64_t approx_in = 64;       // in_proj input: 16 + 16 + 32 sinusoidal features
    int64_t approx_width = 5120;  // in_proj output
    int approx_layers = 5;
    // Chroma1-Radiance: pixels in and out (flux.pixel_patch_in), no final_layer.
    bool radiance = false;
    RadianceConfig rad;
};

// Reads the layout under `prefix`; errors name the first missing or mis-shaped tensor.
Result<ChromaConfig> detect_chroma(const TensorIndex& index, const std::string& prefix);

// The approximator's row positions 0..343 (an input of every graph).
std::vector<float> chroma_mod_index();

// x [W, H, C, N]; timesteps [M] (sigma; M = 1 when the batch shares it, else N); mod_index
// [344] from chroma_mod_index(); context [context_dim, L, N or 1]; key_mask f32 [L + image
// tokens, N] or null; pe from flux_positions; skip as build_flux -> flow prediction
// [W, H, C, N]. Radiance: x is the image itself (3 channels in [-1, 1], any size: padded to
// the patch inside, pe for the padded size), dct from radiance_dct.
ggml_tensor* build_chroma(nn::Ctx& c, const ChromaConfig& cfg, ggml_tensor* x,
                          ggml_tensor* timesteps, ggml_tensor* mod_index, ggml_tensor* context,
                          ggml_tensor* key_mask, ggml_tensor* pe_cos, ggml_tensor* pe_sin,
                          const std::vector<int>* skip = nullptr, ggml_tensor* dct = nullptr);

}  // namespace ggdiff::models
