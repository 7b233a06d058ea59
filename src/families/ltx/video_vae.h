// The LTX-2 video VAE decoder (LTX-Video 0.9.x and LTX-2 / 2.3 layouts), as
// stable-diffusion.cpp runs it: the diffusion latent [w, h, 128, T] is un-normalized with the
// per-channel statistics, then conv_in, a list of up blocks read from the weights (groups of
// residual blocks with PixelNorm + SiLU + 3x3x3 convolutions, optionally timestep-conditioned;
// depth-to-space upsamplers x2 in time and/or space), PixelNorm, SiLU, conv_out, and 4x4
// pixel patches back to RGB: [w*32, h*32, 3, 1 + 8 (T - 1)] for LTX-2, roughly in [-1, 1].
//
// Every 3x3x3 convolution of the decoder is non-causal: one copy of the first frame in
// front, one of the last frame behind. Each x2-in-time upsampler drops its first output
// frame (the causal first frame). Layout inside the graphs: [W, H, C, frames].
//
// Temporal tiling (the reference's --vae-tiling on video): the latent is decoded in windows of
// `frames` latent frames advancing by frames - overlap; each convolution starts a window with
// the frame the previous window kept for it (its last non-overlap input frame) instead of a
// copy, and the overlap's output frames are dropped except in the last window. Memory is that
// of one window; the result differs slightly from the whole decode at window edges (as the
// reference's does).
//
// Tensors under `prefix` (first_stage_model. or vae.): decoder.conv_in.conv.{weight,bias},
// decoder.up_blocks.N.{res_blocks.M.{conv1,conv2}.conv.*, res_blocks.M.scale_shift_table,
// time_embedder.timestep_embedder.linear_{1,2}.*} or decoder.up_blocks.N.conv.conv.*,
// decoder.conv_out.conv.*, decoder.{timestep_scale_multiplier, last_scale_shift_table,
// last_time_embedder.timestep_embedder.linear_{1,2}.*} (timestep conditioning), and
// per_channel_statistics.{mean-of-means,std-of-means}.
#pragma once

#include <string>
#include <vector>

#include "core/host_tensor.h"
#include "core/status.h"
#include "io/tensor_index.h"
#include "models/vae/wan_vae.h"
#include "nn/weights.h"

namespace ggdiff::ltx {

// A block of the decoder (up) or the encoder (down): a residual group, or a resampler.
struct LtxVaeUpBlock {
    std::string prefix;  // "<prefix>decoder.up_blocks.N." / "<prefix>encoder.down_blocks.N."
    bool residual_group = true;
    int layers = 0;    // residual group: its res_blocks
    int64_t in = 0;    // channels in
    int64_t out = 0;   // channels out (a group keeps them)
    int factor_t = 1;  // resampler: x2 in time (and/or) x2 in space
    int factor_s = 1;
};
using LtxVaeDownBlock = LtxVaeUpBlock;

struct LtxVideoVaeConfig {
    std::string prefix = "first_stage_model.";
    int64_t latent_channels = 128;
    int64_t conv_in_width = 0;  // decoder.conv_in output
    int64_t out_width = 0;      // conv_out input
    int patch = 4;              // pixels per side of one output patch
    bool timestep_conditioning = false;
    float decode_timestep = 0.05f;
    std::vector<LtxVaeUpBlock> up;
    bool has_encoder = false;
    // The encoder (when has_encoder): conv_in width, blocks (SpaceToDepthDownsample: the
    // causal convolution to out/(ft fs fs) channels, both paths averaged down), last width.
    int64_t enc_in_width = 0;
    std::vector<LtxVaeDownBlock> down;
    int64_t enc_out_width = 0;

    int time_scale() const;   // product of the time factors (8 for LTX-2)
    int space_scale() const;  // patch times the space factors (32 for LTX-2)
};

// The prefix the LTX video VAE's tensors have in `index` ("first_stage_model.", "vae." or
// ""), or "" with ok = false when there is none.
bool find_ltx_video_vae(const TensorIndex& index, std::string* prefix);

// Reads the block list and widths; the error names the first missing or mis-shaped tensor.
Result<LtxVideoVaeConfig> detect_ltx_video_vae(const TensorIndex& index, const std::string& prefix);

// Video frames of a latent with T frames (1 + time_scale (T - 1)), and back (0 when `frames`
// is not of that form).
int ltx_video_frames(const LtxVideoVaeConfig& cfg, int latent_frames);
int ltx_latent_frames(const LtxVideoVaeConfig& cfg, int video_frames);

// The graph of one decode window. z [w, h, latent_channels, n] (diffusion latent, frames
// [first, first + n) of the whole), `timestep`: a 1-element graph input holding
// cfg.decode_timestep (only read with timestep conditioning; may be null otherwise).
// `cache` (null: the whole sequence at once, first == 0 and overlap == 0): the per-
// convolution frames carried between windows, as models::WanCausalCache (in: from the
// previous window, nullptr before the first; out: for the next). `overlap`: latent frames at
// the end of this window that the next one decodes again (their output is dropped).
// Returns [w*s, h*s, 3, frames] with s = space_scale().
ggml_tensor* build_ltx_decode(nn::Ctx& c, const LtxVideoVaeConfig& cfg, ggml_tensor* z,
                              ggml_tensor* timestep, int first,
                              models::WanCausalCache* cache = nullptr, int overlap = 0);

// The encoder's graph: video [W, H, 3, 1 + 8 n] in [-1, 1] (W, H multiples of 32) -> the
// normalized diffusion latent [W/32, H/32, 128, 1 + n] (the posterior mean), with the
// reference's causal padding (two copies of the first frame before each 3x3x3 convolution).
ggml_tensor* build_ltx_encode(nn::Ctx& c, const LtxVideoVaeConfig& cfg, ggml_tensor* video);

// The same through `run` (one graph). Frames beyond the last 1 + 8 n are dropped, as the
// reference does (with a warning); sizes that are not multiples of space_scale() are refused.
Result<HostTensor> ltx_encode_video(const LtxVideoVaeConfig& cfg, const HostTensor& video,
                                    const models::WanGraphRun& run);

struct LtxTemporalTiling {
    bool enabled = false;
    int frames = 4;   // latent frames per window (the reference's temporal_tile_frames)
    int overlap = 1;  // latent frames shared by neighbouring windows
};

// The windows (first latent frame, count, overlap) temporal tiling decodes for T frames,
// with the reference's adjustments (overlap < frames, overlap < T).
struct LtxWindow {
    int first = 0, count = 0, overlap = 0;
};
std::vector<LtxWindow> ltx_temporal_windows(int latent_frames, LtxTemporalTiling tiling);

// The decode through `run` (one graph; with tiling one graph per window): z [w, h, C, T]
// diffusion latent -> video [w*s, h*s, 3, ltx_video_frames(T)], unclamped.
Result<HostTensor> ltx_decode_video(const LtxVideoVaeConfig& cfg, const HostTensor& z,
                                    const models::WanGraphRun& run, LtxTemporalTiling tiling = {});

// Pieces shared with the latent upscaler (layout [W, H, C, frames]):
// a 3x3x3 convolution (weight torch [out, in, 3, 3, 3] at p + "weight", bias p + "bias")
// over the frames of `seq` already padded in time (one frame each side): [W, H, out, F - 2],
// 1-pixel zero padding in space;
ggml_tensor* conv3d_valid(nn::Ctx& c, ggml_tensor* seq, const std::string& p, int64_t in,
                          int64_t out);
// depth to space, "b (c p1 p2 p3) t h w -> b c (t p1) (h p2) (w p3)": [W, H, C*ft*fs*fs, F]
// with channel ((c * ft + it) * fs + ih) * fs + iw -> [W*fs, H*fs, C, F*ft], without the
// first output frame when `drop_first` (and ft > 1).
ggml_tensor* depth_to_space(ggml_context* ctx, ggml_tensor* x, int64_t ch, int ft, int fs,
                            bool drop_first);

}  // namespace ggdiff::ltx
