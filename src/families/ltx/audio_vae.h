// The LTX-2 audio VAE decoder and its vocoder, as stable-diffusion.cpp runs them: the audio
// latent [16 frequency bins, T, 8 channels, 1] is un-normalized per (channel, bin), decoded
// by a 2-D network over (frequency, time) into a two-channel log-mel spectrogram [64 bins,
// 4 T - 3 frames, 2, 1] (convolutions causal in time: two rows of zeros in front, one column
// each side in frequency; PixelNorm + SiLU residual blocks; nearest x2 upsampling that drops
// its first time row), which a BigVGAN-style vocoder (conv_pre, transposed-convolution
// upsamplers x5 x2 x2 x2 x2 x2, each followed by three AMP blocks averaged: anti-aliased
// Snake-beta activations (x2 up with a 12-tap filter, Snake-beta, x2 down with a 12-tap
// low-pass, replicated edges) around dilated 1-D convolutions; act_post, conv_post, clamp to
// [-1, 1]) turns into a 16 kHz stereo waveform, 160 samples per mel frame.
//
// Tensors under `prefix`: audio_vae.decoder.{conv_in, mid.block_{1,2}, up.L.block.B,
// up.L.upsample, conv_out}.* (each convolution under .conv.), audio_vae.per_channel_statistics.
// {mean,std}-of-means, vocoder.vocoder.{conv_pre, ups.I, resblocks.J.{convs1,convs2}.K,
// resblocks.J.{acts1,acts2}.K.{act.alpha, act.beta, upsample.filter,
// downsample.lowpass.filter}, act_post.*, conv_post.weight}.
//
// With a bandwidth extension (vocoder.bwe_generator.*, vocoder.mel_stft.*: LTX-2.3's audio
// VAE) the 16 kHz waveform goes on to 48 kHz as the reference does: zero-padded to a multiple
// of the 80-sample hop, its log-mel spectrogram (512-point STFT as a strided convolution with
// the file's forward_basis, magnitudes through the file's mel_basis, log of at least 1e-5)
// runs through a second vocoder of the same kind (rates 6, 5, 2, 2, 2; no final clamp), whose
// output is added to the waveform upsampled x3 by a Hann-windowed sinc (43 taps, rolloff
// 0.99, edges replicated), clamped to [-1, 1] and cut to 3x the samples.
#pragma once

#include <string>
#include <vector>

#include "core/host_tensor.h"
#include "core/status.h"
#include "io/tensor_index.h"
#include "models/vae/wan_vae.h"
#include "nn/weights.h"

namespace ggdiff::ltx {

struct LtxAudioVaeConfig {
    std::string prefix;
    int64_t latent_channels = 8;
    int64_t latent_bins = 16;  // frequency bins of the latent
    int64_t mel_bins = 64;     // latent_bins * 4
    int64_t audio_channels = 2;
    int64_t base_channels = 128;             // decoder width at level 0
    std::vector<int64_t> multipliers;        // per level (level 0 first): {1, 2, 4}
    int res_blocks = 2;                      // residual blocks per level (+ 1)
    int64_t vocoder_channels = 1536;         // conv_pre output
    std::vector<int> upsample_rates;         // {5, 2, 2, 2, 2, 2}
    std::vector<int> upsample_kernels;       // from the weights
    std::vector<int> resblock_kernels;       // {3, 7, 11}
    std::vector<int> dilations = {1, 3, 5};  // of every AMP block
    int sample_rate = 16000;                 // of the waveform ltx_decode_audio returns
    int vocoder_rate = 16000;                // of the waveform the first vocoder makes
    int hop = 160;                           // samples per mel frame
    // The bandwidth extension (48 kHz), when the file has one.
    bool has_bwe = false;
    int bwe_ratio = 3;           // 48 kHz / 16 kHz
    int bwe_hop = 80;            // STFT hop of its log-mel
    int64_t bwe_fft = 512;       // STFT length (forward_basis)
    int64_t bwe_mel_bins = 64;   // mel_basis rows
    int64_t bwe_channels = 512;  // its vocoder's conv_pre output
    std::vector<int> bwe_rates = {6, 5, 2, 2, 2};
    std::vector<int> bwe_kernels;           // from the weights
    std::vector<int> bwe_resblock_kernels;  // from the weights

    int mel_frames(int latent_frames) const { return 4 * latent_frames - 3; }
};

// The prefix of the LTX audio VAE's tensors in `index` ("", "audio_vae_model." or
// "first_stage_model."): where audio_vae.decoder.conv_in.conv.weight is.
bool find_ltx_audio_vae(const TensorIndex& index, std::string* prefix);

// Reads the widths and block counts; the error names the first missing or mis-shaped tensor.
Result<LtxAudioVaeConfig> detect_ltx_audio_vae(const TensorIndex& index, const std::string& prefix);

// latent [latent_bins, T, latent_channels, 1] -> log-mel [mel_bins, 4 T - 3, channels, 1].
ggml_tensor* build_ltx_audio_mel(nn::Ctx& c, const LtxAudioVaeConfig& cfg, ggml_tensor* latent);

// mel [mel_bins, frames, channels, 1] -> waveform [frames * hop, channels, 1, 1], clamped to
// [-1, 1] (`clamp` false: as it comes; for checks).
ggml_tensor* build_ltx_vocoder(nn::Ctx& c, const LtxAudioVaeConfig& cfg, ggml_tensor* mel,
                               bool clamp = true);

// The extension's log-mel: waveform [T, channels, 1] (T a multiple of bwe_hop) -> [mels,
// T / bwe_hop, channels], each channel's spectrum on its own.
ggml_tensor* build_ltx_bwe_mel(nn::Ctx& c, const LtxAudioVaeConfig& cfg, ggml_tensor* wave);

// The bandwidth extension: waveform [T, channels, 1] at vocoder_rate -> [T * bwe_ratio,
// channels, 1] at sample_rate; `filter` is ltx_bwe_resample_filter(cfg.bwe_ratio) as a graph
// input.
ggml_tensor* build_ltx_bwe(nn::Ctx& c, const LtxAudioVaeConfig& cfg, ggml_tensor* wave,
                           ggml_tensor* filter);

// The Hann-windowed sinc taps of the x `ratio` upsampler (2 * 7 * ratio + 1 of them).
std::vector<float> ltx_bwe_resample_filter(int ratio);

// ltx_bwe_resample_filter(cfg.bwe_ratio) as a [taps, 1, 1, 1] graph input; empty without the
// extension.
HostTensor ltx_bwe_filter(const LtxAudioVaeConfig& cfg);

// The whole decode as one graph (what a module declares its weights with, and what
// ltx_decode_audio runs): latent -> log-mel -> vocoder (-> bandwidth extension, `bwe_filter`
// being ltx_bwe_filter(cfg) as an input; nullptr without one).
ggml_tensor* build_ltx_audio_decode(nn::Ctx& c, const LtxAudioVaeConfig& cfg, ggml_tensor* latent,
                                    ggml_tensor* bwe_filter);

// Both through `run` (one graph): latent [16, T, 8, 1] -> waveform [samples, channels, 1, 1]
// at cfg.sample_rate (the bandwidth extension included when the file has one).
Result<HostTensor> ltx_decode_audio(const LtxAudioVaeConfig& cfg, const HostTensor& latent,
                                    const models::WanGraphRun& run);

}  // namespace ggdiff::ltx
