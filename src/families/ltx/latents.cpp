#include "families/ltx/latents.h"

#include <algorithm>
#include <cmath>

namespace ggdiff::models {

int64_t ltx_latent_frames(int frames) {
    return (std::max(1, frames) - 1) / 8 + 1;
}

int64_t ltx_audio_steps(int frames, int fps) {
    // 16 kHz, mel hop 160, 4x downsampling: 25 latent steps per second (float, as the
    // reference computes it).
    constexpr float kPerSecond = 16000.0f / 160.0f / 4.0f;
    return static_cast<int64_t>(
        std::ceil(static_cast<float>(frames) / static_cast<float>(fps) * kPerSecond));
}

int ltx_output_frames(int frames) {
    return static_cast<int>(1 + 8 * (ltx_latent_frames(frames) - 1));
}

int64_t ltx_request_audio_steps(int frames, int fps) {
    return ltx_audio_steps(ltx_output_frames(frames), std::max(1, fps));
}

int64_t ltx_packed_channels(int64_t w, int64_t h, int64_t frames, int64_t channels,
                            int64_t audio_steps) {
    const int64_t plane = w * h * frames;
    const int64_t audio = audio_steps * kLtxAudioChannels * kLtxAudioBins;
    return channels + (audio + plane - 1) / plane;
}

HostTensor ltx_pack(const HostTensor& video, int64_t frames, const HostTensor& audio) {
    const int64_t w = video.dim(0), h = video.dim(1);
    const int64_t channels = video.dim(2) / frames;
    const int64_t steps = audio.data.empty() ? 0 : audio.dim(1);
    const int64_t packed = ltx_packed_channels(w, h, frames, channels, steps);
    HostTensor out({w, h, packed * frames, 1});  // zeros
    std::copy(video.data.begin(), video.data.end(), out.data.begin());
    std::copy(audio.data.begin(), audio.data.end(), out.data.begin() + video.data.size());
    return out;
}

std::pair<HostTensor, HostTensor> ltx_unpack(const HostTensor& packed, int64_t channels,
                                             int64_t frames, int64_t audio_steps) {
    const int64_t w = packed.dim(0), h = packed.dim(1);
    HostTensor video({w, h, channels * frames, 1});
    std::copy(packed.data.begin(), packed.data.begin() + static_cast<int64_t>(video.data.size()),
              video.data.begin());
    HostTensor audio({kLtxAudioBins, audio_steps, kLtxAudioChannels, 1});
    const auto from = packed.data.begin() + static_cast<int64_t>(video.data.size());
    std::copy(from, from + static_cast<int64_t>(audio.data.size()), audio.data.begin());
    return {std::move(video), std::move(audio)};
}

std::vector<float> ltx2_sigmas(int steps, int64_t tokens, const Ltx2Schedule& s) {
    std::vector<float> out;
    if (steps <= 0) return {0.0f};
    if (tokens <= 0) tokens = 4096;
    const float m = (s.max_shift - s.base_shift) / (4096.0f - 1024.0f);
    const float b = s.base_shift - m * 1024.0f;
    const float e = std::exp(static_cast<float>(tokens) * m + b);
    const float terminal = std::clamp(s.terminal, 0.0f, 0.99f);
    for (int i = 0; i <= steps; ++i) {
        float sigma = 1.0f - static_cast<float>(i) / static_cast<float>(steps);
        if (sigma != 0.0f) sigma = e / (e + (1.0f / sigma - 1.0f));
        out.push_back(sigma);
    }
    if (s.stretch && out.size() > 2) {
        const float scale = (1.0f - out[static_cast<size_t>(steps - 1)]) / (1.0f - terminal);
        if (scale > 1e-8f) {
            for (int i = 0; i < steps; ++i) out[i] = 1.0f - (1.0f - out[i]) / scale;
        }
    }
    out[static_cast<size_t>(steps)] = 0.0f;
    return out;
}

}  // namespace ggdiff::models
