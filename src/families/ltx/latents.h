// LTX-2's latent bookkeeping, as stable-diffusion.cpp (38a51f81) does it:
//   - video: 128 channels at 1/32 of the size, (frames - 1) / 8 + 1 latent frames, laid out
//     [w, h, C * T, 1] with channel c of frame t in plane c * T + t (the reference's
//     {W, H, T, C});
//   - audio: 8 channels x 16 mel bins x ceil(frames / fps * 25) steps ([16, steps, 8, 1]);
//   - both sampled as one tensor: the audio values follow the video's as extra channels of the
//     video layout, ceil(audio values / (w * h * T)) of them, the tail zero; so the seed's
//     noise covers the audio too;
//   - the ltx2 sigma schedule: shift exp(base + (tokens - 1024) (max - base) / 3072) applied to
//     a linear grid, then stretched so that the last non-zero sigma is `terminal`.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/host_tensor.h"

namespace ggdiff::models {

constexpr int64_t kLtxAudioChannels = 8, kLtxAudioBins = 16;

int64_t ltx_latent_frames(int frames);
int64_t ltx_audio_steps(int frames, int fps);
// What a request of `frames` frames makes: 1 + 8 (T - 1) frames from T latent frames, and the
// audio steps of that many frames at `fps` (at least 1).
int ltx_output_frames(int frames);
int64_t ltx_request_audio_steps(int frames, int fps);
// Channels per latent frame of the packed tensor: video channels plus the audio's share.
int64_t ltx_packed_channels(int64_t w, int64_t h, int64_t frames, int64_t channels,
                            int64_t audio_steps);
// video [w, h, C * T, 1] of T latent frames and audio [16, steps, 8, 1] -> [w, h, packed * T, 1].
HostTensor ltx_pack(const HostTensor& video, int64_t frames, const HostTensor& audio);
// The inverse: -> video [w, h, C * T, 1], audio [16, steps, 8, 1].
std::pair<HostTensor, HostTensor> ltx_unpack(const HostTensor& packed, int64_t channels,
                                             int64_t frames, int64_t audio_steps);

struct Ltx2Schedule {
    float max_shift = 2.05f, base_shift = 0.95f, terminal = 0.1f;
    bool stretch = true;
};
// steps + 1 sigmas (the last 0) for `tokens` video tokens ((W/32)(H/32) latent frames).
std::vector<float> ltx2_sigmas(int steps, int64_t tokens, const Ltx2Schedule& s = {});

}  // namespace ggdiff::models
