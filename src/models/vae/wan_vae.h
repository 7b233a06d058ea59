// The Wan 2.1 VAE (Qwen Image's VAE; the 4-channel RGBA variant of Qwen Image Layered) on
// single frames. Its causal 3-D convolutions pad time with two zero frames in front, so on
// one frame a kernel with KT temporal taps reduces to a 2-D convolution with its last tap;
// the temporal up/downsampling convolutions are skipped on a first frame, exactly as the
// reference's chunked decoder does. The result is a 2-D network: RMS norms over channels
// (gamma), SiLU, 3x3 convolutions, nearest 2x upsampling (halving the channels), stride-2
// downsampling after right/bottom zero padding, and one single-head attention block in the
// middle.
//
// Video (the causal 3-D network): one graph per chunk of frames (decode: one latent frame per
// chunk; encode: frame 0, then 4 frames per chunk). Frames lie along dim 3 inside a chunk.
// Each causal convolution keeps the last two frames of its input sequence on the host between
// chunks (zeros before the first chunk), so a chunk's 3-D convolutions see exactly the frames
// a convolution over the whole sequence would; memory stays that of one chunk (plus the
// caches: two frames per convolution). The temporal
// upsamplers of the decoder skip chunk 0 and start with zeros on chunk 1; the temporal
// downsamplers of the encoder pass chunk 0 through and then convolve stride 2 over their
// previous frame and the chunk's frames.
//
// Tensors under `prefix` ("first_stage_model."): conv1 (encoder output 2z -> 2z), conv2
// (z -> z, before the decoder), {encoder,decoder}.conv1, .{downsamples,upsamples}.N with
// residual.{0,2,3,6}[, shortcut] or resample.1[, time_conv], .middle.{0,1,2}, .head.{0,2}.
// The block list is read from the weights. Wan 2.2 (TI2V 5B: 48 latent channels) nests its
// blocks in groups ({down,up}samples.N.{down,up}samples.M) with weightless shortcuts, and
// works on 2x2 patches of the image (12 channels); it always runs the causal network.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/host_tensor.h"
#include "core/status.h"
#include "io/tensor_index.h"
#include "nn/weights.h"

namespace ggdiff::models {

struct WanBlock {
    enum class Kind { Residual, Upsample, Downsample } kind = Kind::Residual;
    std::string prefix;  // "<prefix>decoder.upsamples.3."
    int64_t in = 0, out = 0;
    bool shortcut = false;
    bool temporal = false;  // Up/Downsample with a time_conv (the x2 time resampling)
};

// Wan 2.2: a group of blocks (Up_ResidualBlock / Down_ResidualBlock) whose input is added
// back after them, resampled without weights (DupUp3D: channels repeated into pixels and
// frames; AvgDown3D: pixels and frames averaged into channels).
struct WanGroup {
    size_t first = 0, count = 0;  // its blocks in WanVaeConfig::decoder / encoder
    int64_t in = 0, out = 0;
    int factor_t = 1, factor_s = 1;
    bool shortcut = false;  // the decoder's last group has none
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
    // Wan 2.2 (TI2V 5B, 48 latent channels): pixels of patch x patch go to channels before
    // the encoder and back after the decoder; groups of blocks with shortcuts.
    int patch = 1;
    std::vector<WanGroup> decoder_groups, encoder_groups;
    // 2-D kernels throughout (a Wan VAE stored with 2-D convolutions): on video each frame
    // is decoded alone and repeated 4 times after the first, and encoding reads the first
    // frame of every 4 (as the reference engine does).
    bool flat = false;
    // Temporal taps of each 3-D convolution kernel by weight name (0: stored as 2-D).
    std::map<std::string, int64_t> taps;
    // Per-channel latent statistics: diffusion latent = (z - mean) / std.
    std::vector<float> mean, std;

    int downscale() const;
    bool wan22() const { return patch > 1 || !decoder_groups.empty(); }
};

// True when the weights under `prefix` are a Wan VAE (RMS-norm gammas in its middle block;
// also a diffusers AutoencoderKLWan left in its names, which detect_wan_vae refuses).
bool is_wan_vae(const TensorIndex& index, const std::string& prefix = "first_stage_model.");

// Reads the block list and widths; the error names the first missing or mis-shaped tensor.
// Wan 2.1 (16 latent channels; 4 image channels: Qwen Image Layered) and Wan 2.2 (48).
Result<WanVaeConfig> detect_wan_vae(const TensorIndex& index,
                                    const std::string& prefix = "first_stage_model.");

// z [w, h, z_dim, 1] (VAE space: already z * std + mean) -> image [w*8, h*8, channels, 1],
// roughly in [-1, 1], unclamped. (Wan 2.2: 16 instead of 8; the one-frame causal network.)
ggml_tensor* build_wan_decode(nn::Ctx& c, const WanVaeConfig& cfg, ggml_tensor* z);

// image [W, H, encoder_channels, 1] in [-1, 1] -> the posterior mean [W/8, H/8, z_dim, 1]
// (VAE space).
ggml_tensor* build_wan_encode(nn::Ctx& c, const WanVaeConfig& cfg, ggml_tensor* x);

// Video frames of a Wan latent with `latent_frames` frames: 1 + 4 (T - 1) (0 for 0).
int wan_video_frames(int latent_frames);
// Latent frames for `video_frames` = 1 + 4 n frames: 1 + n (0 when not of that form).
int wan_latent_frames(int video_frames);

// The per-convolution caches of one chunk graph, by slot (the causal convolutions in graph
// order). `in[s]`: the graph input holding the cache from the previous chunk (nullptr: none
// yet, zeros); `out[s]`: the cache for the next chunk (nullptr: left as it was).
struct WanCausalCache {
    std::vector<ggml_tensor*> in, out;
    size_t next = 0;
    size_t take();  // the next slot (grows in/out)
};

// Chunk `chunk` of the causal decode: z [w, h, z_dim, 1] (VAE space, latent frame `chunk`)
// -> frames [w*d, h*d, channels, 1 (chunk 0) or 4] (d = downscale(): 8, Wan 2.2 16).
ggml_tensor* build_wan_decode_chunk(nn::Ctx& c, const WanVaeConfig& cfg, ggml_tensor* z, int chunk,
                                    WanCausalCache& cache);

// Chunk `chunk` of the causal encode: x [W, H, encoder_channels, 1 (chunk 0) or 4] in [-1, 1]
// -> the posterior mean of latent frame `chunk`, [W/d, H/d, z_dim, 1] (VAE space).
ggml_tensor* build_wan_encode_chunk(nn::Ctx& c, const WanVaeConfig& cfg, ggml_tensor* x, int chunk,
                                    WanCausalCache& cache);

// Builds one chunk graph: `input` declares a graph input holding a copy of a host tensor;
// returns the outputs.
using WanGraphBuild = std::function<std::vector<ggml_tensor*>(
    nn::Ctx& c, const std::function<ggml_tensor*(const HostTensor&)>& input)>;
// Computes the graph `build` makes and returns its outputs.
using WanGraphRun = std::function<Result<std::vector<HostTensor>>(const WanGraphBuild& build)>;

// The causal video decode, chunk by chunk through `run`: z [w, h, z_dim, T] (VAE space, latent
// frame t at index t of dim 3) -> [w*d, h*d, channels, 1 + 4 (T - 1)], unclamped.
Result<HostTensor> wan_decode_video(const WanVaeConfig& cfg, const HostTensor& z,
                                    const WanGraphRun& run);

// The causal video encode: video [W, H, encoder_channels, 1 + 4 n] in [-1, 1] -> the posterior
// mean [W/d, H/d, z_dim, 1 + n] (VAE space, latent frame t at index t of dim 3).
Result<HostTensor> wan_encode_video(const WanVaeConfig& cfg, const HostTensor& video,
                                    const WanGraphRun& run);

}  // namespace ggdiff::models
