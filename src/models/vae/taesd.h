// TAESD, the tiny autoencoder (madebyollin/taesd; diffusers AutoencoderTiny): plain
// 3x3 conv / ReLU blocks, nearest upsampling and stride-2 convs, 8x per axis.
//
// Weights: the diffusers file (madebyollin/taesd diffusion_pytorch_model.safetensors)
// loaded under a role prefix, e.g. "taesd." ->
//   taesd.decoder.layers.{0..18}.*   (0 conv, 1 ReLU, 2-4 blocks, 5 upsample, 6 conv, ...)
//   taesd.encoder.layers.{0..14}.*
// The original taesd.py checkpoints (taesd_decoder.safetensors, keys "1.weight",
// "3.conv.0.weight", ... with a Clamp module at index 0) work too when loaded under
// "<prefix>decoder.layers." / "<prefix>encoder.layers.": detection sees the decoder's
// first conv at index 1 and shifts every index by one.
//
// Value conventions follow diffusers' AutoencoderTiny so that the pipeline treats both
// autoencoders alike: the latent is the diffusion model's own latent (scale_factor 1,
// shift 0 here, i.e. no rescaling), images are in [-1, 1] on both sides. TAESD variants
// with 16 latent channels (taesd3, taef1) are detected by width.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "io/tensor_index.h"
#include "nn/weights.h"

namespace ggdiff::models {

struct TaesdConfig {
    int channels = 64;     // hidden width
    int z_channels = 4;    // latent channels
    int in_channels = 3;   // image channels into the encoder
    int out_channels = 3;  // image channels out of the decoder
    bool has_decoder = true;
    bool has_encoder = false;
    int decoder_offset = 0;  // 1 for the original taesd.py layout (Clamp at index 0)
    // The caller's latent normalization (z / scale_factor + shift_factor), as for VaeConfig.
    float scale_factor = 1.0f;
    float shift_factor = 0.0f;

    int downscale() const { return 8; }
};

// Reads widths from the weights under `prefix` and checks every tensor the graphs use;
// the error names the first missing or mis-shaped tensor.
Result<TaesdConfig> detect_taesd(const TensorIndex& index, const std::string& prefix = "taesd.");

// Every tensor the TAESD graphs read with its torch shape (decoder, then encoder).
std::vector<std::pair<std::string, std::vector<int64_t>>> taesd_tensor_shapes(
    const TaesdConfig& cfg, const std::string& prefix = "taesd.");

// z [w, h, z_channels, N] (the diffusion latent itself) -> image [8w, 8h, 3, N] in about
// [-1, 1], unclamped.
ggml_tensor* build_taesd_decode(nn::Ctx& c, const TaesdConfig& cfg, ggml_tensor* z,
                                const std::string& prefix = "taesd.");

// image [W, H, 3, N] in [-1, 1] (W, H multiples of 8) -> latent [W/8, H/8, z_channels, N]
// (no moments: TAESD's encoder is deterministic).
ggml_tensor* build_taesd_encode(nn::Ctx& c, const TaesdConfig& cfg, ggml_tensor* x,
                                const std::string& prefix = "taesd.");

}  // namespace ggdiff::models
