// The Wan 2.1 VAE (Qwen Image's VAE; the 4-channel RGBA variant of Qwen Image Layered) on
// single frames. Its causal 3-D convolutions pad time with two zero frames in front, so on
// one frame a kernel with KT temporal taps reduces to a 2-D convolution with its last tap;
// the temporal up/downsampling convolutions are skipped on a first frame, exactly as the
// reference's chunked decoder does. The result is a 2-D network: RMS norms over channels
// (gamma), SiLU, 3x3 convolutions, nearest 2x upsampling (halving the channels), stride-2
// downsampling after right/bottom zero padding, and one single-head attention block in the
// middle.
//
// Tensors under `prefix` ("first_stage_model."): conv1 (encoder output 2z -> 2z), conv2
// (z -> z, before the decoder), {encoder,decoder}.conv1, .{downsamples,upsamples}.N with
// residual.{0,2,3,6}[, shortcut] or resample.1, .middle.{0,1,2}, .head.{0,2}. The block list
// is read from the weights.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "io/tensor_index.h"
#include "nn/weights.h"

namespace ggdiff::models {

struct WanBlock {
    enum class Kind { Residual, Upsample, Downsample } kind = Kind::Residual;
    std::string prefix;  // "<prefix>decoder.upsamples.3."
    int64_t in = 0, out = 0;
    bool shortcut = false;
};

struct WanVaeConfig {
    std::string prefix = "first_stage_model.";
    int64_t z_dim = 16;
    int64_t image_channels = 3;  // decoder output (4: RGBA, Qwen Image Layered)
    int64_t encoder_channels = 3;
    bool has_encoder = false;
    int64_t dec_width = 384;  // decoder.conv1 output (middle width)
    int64_t enc_width = 384;  // encoder middle width
    std::vector<WanBlock> decoder, encoder;
    // Temporal taps of each 3-D convolution kernel by weight name (0: stored as 2-D).
    std::map<std::string, int64_t> taps;
    // Per-channel latent statistics: diffusion latent = (z - mean) / std.
    std::vector<float> mean, std;

    int downscale() const;
};

// True when the weights under `prefix` are a Wan VAE (RMS-norm gammas in its middle block).
bool is_wan_vae(const TensorIndex& index, const std::string& prefix = "first_stage_model.");

// Reads the block list and widths; the error names the first missing or mis-shaped tensor.
Result<WanVaeConfig> detect_wan_vae(const TensorIndex& index,
                                    const std::string& prefix = "first_stage_model.");

// z [w, h, z_dim, 1] (VAE space: already z * std + mean) -> image [w*8, h*8, channels, 1],
// roughly in [-1, 1], unclamped.
ggml_tensor* build_wan_decode(nn::Ctx& c, const WanVaeConfig& cfg, ggml_tensor* z);

// image [W, H, encoder_channels, 1] in [-1, 1] -> the posterior mean [W/8, H/8, z_dim, 1]
// (VAE space).
ggml_tensor* build_wan_encode(nn::Ctx& c, const WanVaeConfig& cfg, ggml_tensor* x);

}  // namespace ggdiff::models
