// The sound track of an audio-video model's result (LTX-2.3) in the server's
// video answers: copied from the library while its frames come
// (ggdiff_generated_audio is valid only during the on_image call), then carried
// by an AVI as its PCM stream or handed out as a WAV file's bytes next to a
// container that cannot carry sound (WebP).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ggdiff.h"

namespace ggdiff::server {

struct SoundTrack {
    int sample_rate = 0;
    int channels = 0;
    std::vector<float> samples;  // interleaved: frame i, channel c at i * channels + c

    // Samples per channel.
    int64_t frames() const {
        return channels > 0 ? static_cast<int64_t>(samples.size()) / channels : 0;
    }
    bool empty() const { return samples.empty(); }
};

// The sound track of the batch item whose frames on_image is being called with
// (empty when it has none: no audio VAE, or a model without sound).
SoundTrack current_sound_track(const ggdiff_model* model);

// A 16-bit PCM WAV file of `sound` (ggdiff_audio_encode_wav). Throws
// std::runtime_error with the library's message.
std::vector<uint8_t> sound_to_wav(const SoundTrack& sound);

// An MJPEG AVI of the frames (JPEG `quality`) with `sound` as its PCM stream.
// Throws std::runtime_error with the library's message.
std::vector<uint8_t> avi_with_sound(const ggdiff_image* frames, int count, int fps, int quality,
                                    const SoundTrack& sound);

}  // namespace ggdiff::server
