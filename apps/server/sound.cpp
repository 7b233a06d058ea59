#include "sound.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <system_error>

namespace ggdiff::server {

namespace {

namespace fs = std::filesystem;

// A private folder for one encode (the C API writes sound to files only), removed with
// everything in it when the encode ends.
class ScratchDir {
  public:
    ScratchDir() {
        std::error_code ec;
        fs::path base = fs::temp_directory_path(ec);
        if (ec) base = "/tmp";
        std::string pattern = (base / "ggdiff-server-sound-XXXXXX").string();
        if (!mkdtemp(pattern.data())) {
            throw std::runtime_error("cannot make a scratch folder in " + base.string() +
                                     " for the sound track");
        }
        path_ = pattern;
    }
    ~ScratchDir() {
        std::error_code ec;
        fs::remove_all(path_, ec);
    }
    ScratchDir(const ScratchDir&) = delete;
    ScratchDir& operator=(const ScratchDir&) = delete;

    std::string file(const char* name) const { return (path_ / name).string(); }

  private:
    fs::path path_;
};

std::vector<uint8_t> read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read back " + path);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

ggdiff_audio c_audio(const SoundTrack& sound) {
    ggdiff_audio a{};
    a.sample_rate = sound.sample_rate;
    a.channels = sound.channels;
    a.frames = sound.frames();
    a.samples = sound.samples.data();
    return a;
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
    ScratchDir dir;
    const std::string path = dir.file("sound.wav");
    const ggdiff_audio a = c_audio(sound);
    if (ggdiff_audio_save_wav(&a, path.c_str()) != 0) {
        throw std::runtime_error(std::string("encoding the sound track failed: ") +
                                 ggdiff_last_error());
    }
    return read_file(path);
}

std::vector<uint8_t> avi_with_sound(const ggdiff_image* frames, int count, int fps,
                                    const SoundTrack& sound) {
    ScratchDir dir;
    const std::string path = dir.file("video.avi");
    const ggdiff_audio a = c_audio(sound);
    if (ggdiff_video_save_audio(frames, count, fps, path.c_str(), 1, &a) != 0) {
        throw std::runtime_error(std::string("encoding the video failed: ") + ggdiff_last_error());
    }
    return read_file(path);
}

}  // namespace ggdiff::server
