// The LDM KL autoencoder (AutoencoderKL of SD1.x / SD2.x / SDXL, and the same layout
// without quant convs in SD3 / FLUX): Encoder and Decoder of ResnetBlocks with one
// self-attention block in the middle. Numerics follow stable-diffusion.cpp's vae.hpp:
// GroupNorm(32, eps 1e-6), SiLU, 3x3 convs, nearest 2x upsampling, asymmetric
// (right/bottom) zero padding before the stride-2 downsampling conv, single-head
// attention over all pixels with scale 1/sqrt(C).
//
// Tensor names (canonical LDM layout under `prefix`, default "first_stage_model."):
//   encoder.conv_in, encoder.down.{i}.block.{j}.{norm1,conv1,norm2,conv2,nin_shortcut},
//   encoder.down.{i}.downsample.conv, encoder.mid.{block_1,attn_1,block_2},
//   encoder.norm_out, encoder.conv_out, quant_conv, post_quant_conv, and the decoder
//   mirror with up.{i}.block.{j} (num_res_blocks + 1 per level) and up.{i}.upsample.conv.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "io/tensor_index.h"
#include "nn/weights.h"

namespace ggdiff::models {

struct VaeConfig {
    int ch = 128;            // base width (decoder.conv_out input channels)
    int z_channels = 4;      // latent channels
    int in_channels = 3;     // image channels into the encoder
    int out_ch = 3;          // image channels out of the decoder
    int num_res_blocks = 2;  // per encoder level (the decoder has one more)
    std::vector<int> ch_mult = {1, 2, 4, 4};
    bool has_quant_conv = true;  // quant_conv / post_quant_conv (SD1/SD2/SDXL; not SD3/FLUX)
    // The FLUX.2 layout names them encoder.quant_conv / decoder.post_quant_conv.
    bool quant_conv_inside = false;
    bool has_encoder = true;  // false for decoder-only VAE files
    // Latent normalization used by the caller: z_vae = z / scale_factor + shift_factor.
    // Set from the latent width here; a family recipe overrides where the weights cannot
    // tell (SDXL's VAE has SD1's shapes but 0.13025; SD3 uses 1.5305 / 0.0609).
    float scale_factor = 0.18215f;
    float shift_factor = 0.0f;

    // Image pixels per latent pixel along each axis (8 for every SD VAE).
    int downscale() const { return 1 << (static_cast<int>(ch_mult.size()) - 1); }
    // The quant convs' names under the VAE prefix.
    std::string quant_conv() const {
        return quant_conv_inside ? "encoder.quant_conv" : "quant_conv";
    }
    std::string post_quant_conv() const {
        return quant_conv_inside ? "decoder.post_quant_conv" : "post_quant_conv";
    }
};

// Reads the architecture from tensor shapes and checks that every tensor the graphs
// use is present with the expected shape; the error names the first offending tensor.
Result<VaeConfig> detect_vae(const TensorIndex& index,
                             const std::string& prefix = "first_stage_model.");

// Every tensor the VAE graphs read, with its torch shape (outermost first), in the
// order the graphs use them: the decoder (and post_quant_conv), then the encoder (and
// quant_conv) when cfg.has_encoder. Attention q/k/v/proj_out are listed as [C, C, 1, 1].
std::vector<std::pair<std::string, std::vector<int64_t>>> vae_tensor_shapes(
    const VaeConfig& cfg, const std::string& prefix = "first_stage_model.");

// z [w, h, z_channels, N], already normalized by the caller (z / scale_factor +
// shift_factor) -> image [w*d, h*d, out_ch, N] roughly in [-1, 1], unclamped
// (d = cfg.downscale()). The caller maps it to pixels with clamp((x + 1) / 2, 0, 1).
ggml_tensor* build_vae_decode(nn::Ctx& c, const VaeConfig& cfg, ggml_tensor* z,
                              const std::string& prefix = "first_stage_model.");

// image [W, H, in_channels, N] in [-1, 1] (W, H multiples of d) -> moments
// [W/d, H/d, 2*z_channels, N]: the mean in channels [0, z), the log-variance in
// [z, 2z), after quant_conv. The caller samples mean + exp(0.5 * clamp(logvar, -30, 20))
// * noise and normalizes ((z - shift_factor) * scale_factor).
ggml_tensor* build_vae_encode(nn::Ctx& c, const VaeConfig& cfg, ggml_tensor* x,
                              const std::string& prefix = "first_stage_model.");

}  // namespace ggdiff::models
