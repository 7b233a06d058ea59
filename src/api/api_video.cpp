// C API: video files from frames (MJPEG AVI, animated WebP), written or encoded in memory.
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "api/api_handles.h"
#include "api/c_api_internal.h"
#include "core/safe_text.h"
#include "ggdiff.h"
#include "image/video_io.h"
#include "image/wav.h"

using ggdiff::api::fail;

namespace {

// Copies the C frames into images; an error names the first bad frame.
ggdiff::Status to_frames(const ggdiff_image* frames, int count, std::vector<ggdiff::Image>& out) {
    if (count < 1) return ggdiff::Status::Error("a video needs at least one frame");
    if (count > ggdiff::kMaxVideoFrames) {
        return ggdiff::Status::Error(std::to_string(count) + " frames exceed the limit of " +
                                     std::to_string(ggdiff::kMaxVideoFrames) + " per video");
    }
    out.resize(static_cast<size_t>(count));
    for (int i = 0; i < count; ++i) {
        const ggdiff_image& f = frames[i];
        const std::string name = "frame " + std::to_string(i);
        if (!f.data) return ggdiff::Status::Error(name + " has no pixel data");
        if (f.channels < 1 || f.channels > 4) {
            return ggdiff::Status::Error(name + " has " + std::to_string(f.channels) +
                                         " channels (1 to 4 are supported)");
        }
        GGDIFF_TRY(ggdiff::check_image_dimensions(f.width, f.height).with_context(name));
        ggdiff::Image& img = out[static_cast<size_t>(i)];
        img.width = f.width;
        img.height = f.height;
        img.channels = f.channels;
        img.pixels.assign(f.data, f.data + img.byte_size());
    }
    return ggdiff::Status::Ok();
}

// A C sound track as an AudioTrack (empty for null or no samples).
ggdiff::Status to_audio(const ggdiff_audio* a, ggdiff::AudioTrack& out) {
    out = ggdiff::AudioTrack{};
    if (!a || !a->samples || a->frames <= 0) return ggdiff::Status::Ok();
    if (a->channels < 1 || a->sample_rate < 1) {
        return ggdiff::Status::Error("audio: " + std::to_string(a->channels) + " channels at " +
                                     std::to_string(a->sample_rate) + " Hz");
    }
    out.sample_rate = a->sample_rate;
    out.channels = a->channels;
    out.samples.assign(a->samples, a->samples + a->frames * a->channels);
    return ggdiff::validate_audio(out);
}

// Hands `bytes` out as a malloc'd copy (free()).
int copy_out(const std::vector<uint8_t>& bytes, unsigned char** out_bytes, size_t* out_size) {
    auto* out = static_cast<unsigned char*>(std::malloc(bytes.empty() ? 1 : bytes.size()));
    if (!out) return fail("out of memory");
    std::memcpy(out, bytes.data(), bytes.size());
    *out_bytes = out;
    *out_size = bytes.size();
    return 0;
}

}  // namespace

extern "C" {

int ggdiff_generated_audio(const ggdiff_model* model, ggdiff_audio* out) {
    if (!model || !out) return fail("ggdiff_generated_audio: null argument");
    *out = ggdiff_audio{};
    if (const auto& a = model->audio; a && !a->empty()) {
        out->sample_rate = a->sample_rate;
        out->channels = a->channels;
        out->frames = static_cast<int64_t>(a->sample_count());
        out->samples = a->samples.data();
    }
    return 0;
}

int ggdiff_video_save_audio(const ggdiff_image* frames, int count, int fps, const char* path,
                            int with_parameters, const ggdiff_audio* audio) {
    if (!frames || !path) return fail("ggdiff_video_save_audio: null argument");
    try {
        std::vector<ggdiff::Image> images;
        ggdiff::Status st = to_frames(frames, count, images);
        ggdiff::AudioTrack track;
        if (st.ok()) st = to_audio(audio, track);
        if (!st.ok())
            return fail(st.with_context("cannot write video " + ggdiff::quote_name(path)));
        ggdiff::VideoWriteOptions wo;
        wo.fps = fps;
        if (with_parameters && frames[0].parameters) wo.parameters = frames[0].parameters;
        if (!track.empty()) wo.audio = &track;
        st = ggdiff::write_video(path, images, wo);
        if (!st.ok()) return fail(st);
        return 0;
    } catch (const std::exception& e) {
        return fail(std::string("writing the video failed: ") + e.what());
    }
}

int ggdiff_audio_save_wav(const ggdiff_audio* audio, const char* path) {
    if (!audio || !path) return fail("ggdiff_audio_save_wav: null argument");
    try {
        ggdiff::AudioTrack track;
        ggdiff::Status st = to_audio(audio, track);
        if (st.ok() && track.empty()) st = ggdiff::Status::Error("no audio samples");
        if (st.ok()) st = ggdiff::write_wav(path, track);
        if (!st.ok()) return fail(st.with_context("cannot write " + ggdiff::quote_name(path)));
        return 0;
    } catch (const std::exception& e) {
        return fail(std::string("writing the WAV file failed: ") + e.what());
    }
}

int ggdiff_video_save(const ggdiff_image* frames, int count, int fps, const char* path,
                      int with_parameters) {
    if (!frames || !path) return fail("ggdiff_video_save: null argument");
    return ggdiff_video_save_audio(frames, count, fps, path, with_parameters, nullptr);
}

int ggdiff_video_encode(const ggdiff_image* frames, int count, int fps, const char* format,
                        int quality, unsigned char** out_bytes, size_t* out_size) {
    if (!frames || !format || !out_bytes || !out_size) {
        return fail("ggdiff_video_encode: null argument");
    }
    return ggdiff_video_encode_audio(frames, count, fps, format, quality, nullptr, out_bytes,
                                     out_size);
}

int ggdiff_video_encode_audio(const ggdiff_image* frames, int count, int fps, const char* format,
                              int quality, const ggdiff_audio* audio, unsigned char** out_bytes,
                              size_t* out_size) {
    if (!frames || !format || !out_bytes || !out_size) {
        return fail("ggdiff_video_encode_audio: null argument");
    }
    *out_bytes = nullptr;
    *out_size = 0;
    try {
        auto fmt = ggdiff::parse_video_format(format);
        if (!fmt.ok()) return fail(fmt.status());
        std::vector<ggdiff::Image> images;
        ggdiff::Status st = to_frames(frames, count, images);
        ggdiff::AudioTrack track;
        if (st.ok()) st = to_audio(audio, track);
        if (!st.ok()) return fail(st.with_context("cannot encode video"));
        ggdiff::VideoWriteOptions wo;
        wo.fps = fps;
        wo.quality = quality;
        if (frames[0].parameters) wo.parameters = frames[0].parameters;
        if (!track.empty()) wo.audio = &track;
        auto bytes = ggdiff::encode_video(images, *fmt, wo);
        if (!bytes.ok()) return fail(bytes.status());
        return copy_out(*bytes, out_bytes, out_size);
    } catch (const std::exception& e) {
        return fail(std::string("encoding the video failed: ") + e.what());
    }
}

int ggdiff_audio_encode_wav(const ggdiff_audio* audio, unsigned char** out_bytes,
                            size_t* out_size) {
    if (!audio || !out_bytes || !out_size) return fail("ggdiff_audio_encode_wav: null argument");
    *out_bytes = nullptr;
    *out_size = 0;
    try {
        ggdiff::AudioTrack track;
        ggdiff::Status st = to_audio(audio, track);
        if (st.ok() && track.empty()) st = ggdiff::Status::Error("no audio samples");
        if (!st.ok()) return fail(st.with_context("cannot encode the WAV file"));
        auto bytes = ggdiff::encode_wav(track);
        if (!bytes.ok()) return fail(bytes.status());
        return copy_out(*bytes, out_bytes, out_size);
    } catch (const std::exception& e) {
        return fail(std::string("encoding the WAV file failed: ") + e.what());
    }
}

int ggdiff_video_check_path(const char* path) {
    if (!path) return fail("ggdiff_video_check_path: null argument");
    ggdiff::Status st = ggdiff::check_video_output_path(path);
    if (!st.ok()) return fail(st);
    return 0;
}

}  // extern "C"
