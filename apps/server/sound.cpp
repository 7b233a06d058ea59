#include "sound.h"

#include <cstdlib>
#include <stdexcept>

namespace ggdiff::server {

namespace {

ggdiff_audio c_audio(const SoundTrack& sound) {
    ggdiff_audio a{};
    a.sample_rate = sound.sample_rate;
    a.channels = sound.channels;
    a.frames = sound.frames();
    a.samples = sound.samples.data();
    return a;
}

std::vector<uint8_t> take(unsigned char* bytes, size_t size) {
    std::vector<uint8_t> out(bytes, bytes + size);
    std::free(bytes);
    return out;
}

}  // namespace

SoundTrack current_sound_track(const ggdiff_model* model) {
    SoundTrack out;
    ggdiff_audio a{};
    if (!model || ggdiff_generated_audio(model, &a) != 0 || !a.samples || a.frames <= 0 ||
        a.channels < 1) {
        return out;
    }
    out.sample_rate = a.sample_rate;
    out.channels = a.channels;
    out.samples.assign(a.samples, a.samples + a.frames * a.channels);
    return out;
}

std::vector<uint8_t> sound_to_wav(const SoundTrack& sound) {
    const ggdiff_audio a = c_audio(sound);
    unsigned char* bytes = nullptr;
    size_t size = 0;
    if (ggdiff_audio_encode_wav(&a, &bytes, &size) != 0) {
        throw std::runtime_error(std::string("encoding the sound track failed: ") +
                                 ggdiff_last_error());
    }
    return take(bytes, size);
}

std::vector<uint8_t> avi_with_sound(const ggdiff_image* frames, int count, int fps, int quality,
                                    const SoundTrack& sound) {
    const ggdiff_audio a = c_audio(sound);
    unsigned char* bytes = nullptr;
    size_t size = 0;
    if (ggdiff_video_encode_audio(frames, count, fps, "avi", quality, &a, &bytes, &size) != 0) {
        throw std::runtime_error(std::string("encoding the video failed: ") + ggdiff_last_error());
    }
    return take(bytes, size);
}

}  // namespace ggdiff::server
