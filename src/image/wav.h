// Audio tracks as generated audio-video families produce them (float samples in [-1, 1],
// interleaved), written as 16-bit PCM WAV files, and read back for checks and tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace ggdiff {

constexpr int kMaxAudioChannels = 8;
constexpr int kMinAudioSampleRate = 1000;
constexpr int kMaxAudioSampleRate = 384000;

struct AudioTrack {
    int sample_rate = 0;         // samples per second per channel
    int channels = 0;            // 1..kMaxAudioChannels
    std::vector<float> samples;  // interleaved: frame i, channel c at i * channels + c

    // Samples per channel (frames of audio).
    size_t sample_count() const {
        return channels > 0 ? samples.size() / static_cast<size_t>(channels) : 0;
    }
    bool empty() const { return samples.empty(); }
};

// Ok when the rate and channel count are in range, the samples fill whole frames, there is
// at least one, and the 16-bit PCM data fits a RIFF file (under 4 GiB).
Status validate_audio(const AudioTrack& audio);

// Each sample clamped to [-1, 1] and scaled by 32767, rounded to nearest (as the reference
// engine converts), interleaved little-endian int16 bytes.
std::vector<uint8_t> audio_to_pcm16(const AudioTrack& audio, size_t first_frame = 0,
                                    size_t frame_count = SIZE_MAX);

// A canonical 44-byte-header WAV: RIFF 'WAVE', 'fmt ' (PCM, 16 bits), 'data'.
Result<std::vector<uint8_t>> encode_wav(const AudioTrack& audio);

// Writes `path` atomically (core/output_file.h).
Status write_wav(const std::string& path, const AudioTrack& audio);

// Reads a PCM WAV (8, 16, 24 or 32-bit integer, or 32-bit float), skipping chunks it does not
// need; samples come back as floats (16-bit: value / 32767, the inverse of the writer).
Result<AudioTrack> decode_wav(const uint8_t* data, size_t size);

// The .wav file written next to an output that cannot carry audio: the path with its
// extension replaced (or ".wav" appended when it has none), as the reference engine does.
std::string audio_sidecar_path(const std::string& output_path);

}  // namespace ggdiff
