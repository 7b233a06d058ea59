// The LTX-2 latent upscalers (ltx-2-spatial-upscaler-x2, x1.5 / x4 "rational" variants and the
// temporal x2 one), as stable-diffusion.cpp runs them on a video latent: initial 3x3x3
// convolution, GroupNorm(32) over the whole clip, SiLU; residual blocks (conv, norm, SiLU,
// conv, norm, + input, SiLU); the upsampler: x2 in space (a 3x3 convolution per frame to 4x
// the channels and a pixel shuffle), rational (num^2 x the channels, pixel shuffle by num,
// then a 5x5 binomial blur with stride den: x1.5 = 3 / 2), or x2 in time (a 3x3x3
// convolution to 2x the channels, a temporal shuffle, without the first frame); the same
// number of residual blocks again; final 3x3x3 convolution. Its 3-D convolutions pad with
// zeros on every axis.
//
// The input is the UN-normalized latent (the reference un-normalizes with the video VAE's
// per-channel statistics, upscales and normalizes again).
//
// Tensors under `prefix` (none in the upscaler files): initial_conv.*, initial_norm.*,
// res_blocks.N.{conv1,norm1,conv2,norm2}.*, upsampler.0.* (x2 space or time) or
// upsampler.conv.* (rational), post_upsample_res_blocks.N.*, final_conv.*.
#pragma once

#include <string>

#include "core/host_tensor.h"
#include "core/status.h"
#include "io/tensor_index.h"
#include "models/vae/wan_vae.h"
#include "nn/weights.h"

namespace ggdiff::ltx {

struct LtxUpscalerConfig {
    enum class Kind { Spatial, Rational, Temporal };
    std::string prefix;
    int64_t channels = 128;  // latent channels (final_conv output)
    int64_t mid = 1024;      // width (initial_norm)
    int blocks = 4;          // residual blocks before and after the upsampler
    Kind kind = Kind::Spatial;
    int num = 2, den = 1;  // spatial factor num / den (Spatial: 2 / 1)

    // Output size of a latent of w x h x frames.
    int64_t out_width(int64_t w) const;
    int64_t out_height(int64_t h) const;
    int64_t out_frames(int64_t frames) const;
};

// True when `index` holds an upscaler under `prefix` (its initial_conv and final_conv).
bool is_ltx_latent_upscaler(const TensorIndex& index, const std::string& prefix = "");

Result<LtxUpscalerConfig> detect_ltx_latent_upscaler(const TensorIndex& index,
                                                     const std::string& prefix = "");

// x [w, h, channels, T] (un-normalized latent) -> [out_width, out_height, channels, out_frames].
ggml_tensor* build_ltx_latent_upscale(nn::Ctx& c, const LtxUpscalerConfig& cfg, ggml_tensor* x);

// The same through `run` (one graph).
Result<HostTensor> ltx_upscale_latent(const LtxUpscalerConfig& cfg, const HostTensor& x,
                                      const models::WanGraphRun& run);

}  // namespace ggdiff::ltx
