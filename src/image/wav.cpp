// WAV (RIFF 'WAVE') written and read byte by byte.
#include "image/wav.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/log.h"
#include "core/safe_text.h"
#include "image/file_io.h"

namespace ggdiff {

namespace {

void put16(std::vector<uint8_t>& b, uint32_t v) {
    b.push_back(static_cast<uint8_t>(v));
    b.push_back(static_cast<uint8_t>(v >> 8));
}
void put32(std::vector<uint8_t>& b, uint32_t v) {
    for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void fourcc(std::vector<uint8_t>& b, const char* id) {
    b.insert(b.end(), id, id + 4);
}
uint32_t le16(const uint8_t* p) {
    return uint32_t(p[0]) | uint32_t(p[1]) << 8;
}
uint32_t le32(const uint8_t* p) {
    return le16(p) | le16(p + 2) << 16;
}

}  // namespace

Status validate_audio(const AudioTrack& audio) {
    if (audio.channels < 1 || audio.channels > kMaxAudioChannels) {
        return Status::Error(string_format("audio: %d channels (1 to %d are supported)",
                                           audio.channels, kMaxAudioChannels));
    }
    if (audio.sample_rate < kMinAudioSampleRate || audio.sample_rate > kMaxAudioSampleRate) {
        return Status::Error(string_format("audio: sample rate %d Hz is not in %d..%d",
                                           audio.sample_rate, kMinAudioSampleRate,
                                           kMaxAudioSampleRate));
    }
    if (audio.samples.empty()) return Status::Error("audio: no samples");
    if (audio.samples.size() % static_cast<size_t>(audio.channels) != 0) {
        return Status::Error(
            string_format("audio: %zu interleaved samples do not fill whole frames of %d channels",
                          audio.samples.size(), audio.channels));
    }
    if (audio.samples.size() * 2 > 0xffffffffull - 4096) {
        return Status::Error("audio: the PCM data exceeds the 4 GiB limit of RIFF files");
    }
    return Status::Ok();
}

std::vector<uint8_t> audio_to_pcm16(const AudioTrack& audio, size_t first_frame,
                                    size_t frame_count) {
    const size_t ch = static_cast<size_t>(std::max(audio.channels, 1));
    const size_t frames = audio.sample_count();
    first_frame = std::min(first_frame, frames);
    frame_count = std::min(frame_count, frames - first_frame);
    std::vector<uint8_t> out;
    out.reserve(frame_count * ch * 2);
    const float* s = audio.samples.data() + first_frame * ch;
    for (size_t i = 0; i < frame_count * ch; ++i) {
        const float v = std::isnan(s[i]) ? 0.0f : std::clamp(s[i], -1.0f, 1.0f);
        const auto pcm = static_cast<int16_t>(std::lrint(v * 32767.0f));
        put16(out, static_cast<uint16_t>(pcm));
    }
    return out;
}

Result<std::vector<uint8_t>> encode_wav(const AudioTrack& audio) {
    GGDIFF_TRY(validate_audio(audio).with_context("cannot encode WAV"));
    const std::vector<uint8_t> pcm = audio_to_pcm16(audio);
    const uint32_t block_align = static_cast<uint32_t>(audio.channels) * 2;
    std::vector<uint8_t> b;
    b.reserve(44 + pcm.size() + 1);
    fourcc(b, "RIFF");
    put32(b, static_cast<uint32_t>(36 + pcm.size() + (pcm.size() & 1)));
    fourcc(b, "WAVE");
    fourcc(b, "fmt ");
    put32(b, 16);
    put16(b, 1);  // PCM
    put16(b, static_cast<uint32_t>(audio.channels));
    put32(b, static_cast<uint32_t>(audio.sample_rate));
    put32(b, static_cast<uint32_t>(audio.sample_rate) * block_align);  // bytes per second
    put16(b, block_align);
    put16(b, 16);  // bits per sample
    fourcc(b, "data");
    put32(b, static_cast<uint32_t>(pcm.size()));
    b.insert(b.end(), pcm.begin(), pcm.end());
    if (pcm.size() & 1) b.push_back(0);  // never with 16-bit samples; RIFF pads to even
    return b;
}

Status write_wav(const std::string& path, const AudioTrack& audio) {
    const std::string context = "cannot write audio " + quote_name(path);
    Result<std::vector<uint8_t>> bytes = encode_wav(audio);
    if (!bytes.ok()) return bytes.status().with_context(context);
    return write_file_atomic(path, bytes->data(), bytes->size()).with_context(context);
}

Result<AudioTrack> decode_wav(const uint8_t* data, size_t size) {
    if (!data || size < 12 || std::memcmp(data, "RIFF", 4) != 0 ||
        std::memcmp(data + 8, "WAVE", 4) != 0) {
        return Status::Error("not a WAV file: no RIFF 'WAVE' header");
    }
    const size_t end = std::min(size, size_t{le32(data + 4)} + 8);
    uint32_t format = 0, channels = 0, rate = 0, bits = 0;
    bool have_fmt = false;
    const uint8_t* pcm = nullptr;
    size_t pcm_size = 0;
    for (size_t pos = 12; pos + 8 <= end;) {
        const uint8_t* c = data + pos;
        const size_t n = le32(c + 4);
        if (n > end - pos - 8) {
            return Status::Error(string_format("WAV: chunk at byte %zu runs past the file", pos));
        }
        if (std::memcmp(c, "fmt ", 4) == 0) {
            if (n < 16) return Status::Error("WAV: fmt chunk too short");
            format = le16(c + 8);
            channels = le16(c + 10);
            rate = le32(c + 12);
            bits = le16(c + 22);
            if (format == 0xfffe && n >= 40) format = le16(c + 32);  // WAVE_FORMAT_EXTENSIBLE
            have_fmt = true;
        } else if (std::memcmp(c, "data", 4) == 0) {
            pcm = c + 8;
            pcm_size = n;
        }
        pos += 8 + n + (n & 1);
    }
    if (!have_fmt) return Status::Error("WAV: no fmt chunk");
    if (!pcm) return Status::Error("WAV: no data chunk");
    const bool is_float = format == 3 && bits == 32;
    if (!(format == 1 && (bits == 8 || bits == 16 || bits == 24 || bits == 32)) && !is_float) {
        return Status::Error(
            string_format("WAV: format %u with %u bits per sample is not supported "
                          "(integer PCM or 32-bit float)",
                          format, bits));
    }
    AudioTrack a;
    a.channels = static_cast<int>(channels);
    a.sample_rate = static_cast<int>(rate);
    if (channels < 1 || channels > kMaxAudioChannels) {
        return Status::Error(string_format("WAV: %u channels", channels));
    }
    const size_t bytes = bits / 8;
    const size_t count = pcm_size / bytes / channels * channels;
    a.samples.resize(count);
    for (size_t i = 0; i < count; ++i) {
        const uint8_t* p = pcm + i * bytes;
        float v = 0;
        if (is_float) {
            const uint32_t u = le32(p);
            std::memcpy(&v, &u, 4);
        } else if (bits == 8) {
            v = (static_cast<int>(p[0]) - 128) / 127.0f;
        } else if (bits == 16) {
            v = static_cast<int16_t>(le16(p)) / 32767.0f;
        } else if (bits == 24) {
            const int32_t s = static_cast<int32_t>((le16(p) | uint32_t(p[2]) << 16) << 8) >> 8;
            v = static_cast<float>(s / 8388607.0);
        } else {
            v = static_cast<float>(static_cast<int32_t>(le32(p)) / 2147483647.0);
        }
        a.samples[i] = v;
    }
    return a;
}

std::string audio_sidecar_path(const std::string& output_path) {
    const size_t slash = output_path.find_last_of('/');
    const size_t dot = output_path.find_last_of('.');
    const bool has_ext =
        dot != std::string::npos && dot > 0 && (slash == std::string::npos || dot > slash + 1);
    return (has_ext ? output_path.substr(0, dot) : output_path) + ".wav";
}

}  // namespace ggdiff
