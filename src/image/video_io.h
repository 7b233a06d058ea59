// Video files made of still frames: MJPEG AVI (RIFF AVI 1.0) and animated WebP, and a reader
// of both for checks and tests. Frames are 8-bit images of one size (grey and alpha are
// converted: AVI stores RGB, WebP RGB or RGBA).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "image/image.h"
#include "image/wav.h"

namespace ggdiff {

enum class VideoFormat { Avi, WebP };

constexpr int kMinVideoFps = 1;
constexpr int kMaxVideoFps = 240;
// Most frames one video may hold (a check against runaway input, far above any model's).
constexpr int kMaxVideoFrames = 100000;

const char* video_format_name(VideoFormat format);       // "avi", "webp"
const char* video_format_mime_type(VideoFormat format);  // "video/x-msvideo", "image/webp"
const char* video_format_extension(VideoFormat format);  // ".avi", ".webp"

// From the file extension, case-insensitive: .avi or .webp (animated). .webm is an error
// saying this build has no WebM encoder; anything else an error naming the extension.
Result<VideoFormat> video_format_from_path(const std::string& path);

// From a format name as APIs spell it (output_format): avi, webp (any case); webm is an
// error saying it is not supported yet.
Result<VideoFormat> parse_video_format(const std::string& name);

struct VideoWriteOptions {
    int fps = 16;            // kMinVideoFps..kMaxVideoFps
    int quality = 90;        // 1..100: JPEG quality of AVI frames; WebP quality, 100 = lossless
    std::string parameters;  // generation parameters to embed; empty = none
    // A sound track to go with the frames (not owned; null = none). AVI carries it as a
    // second stream; WebP cannot: encode_video leaves it out and write_video writes it next
    // to the video as audio_sidecar_path(path) (a .wav file), as the reference engine does.
    const AudioTrack* audio = nullptr;
};

// Encodes `frames` (at least one, all of one size) as a video:
//  AVI: RIFF 'AVI ' with hdrl (avih, one 'vids' stream, strh + strf BITMAPINFOHEADER 'MJPG'),
//       LIST INFO (ISFT "ggdiff", and ICMT = the parameters text when given), LIST movi with
//       one '00dc' JPEG chunk per frame, and an idx1 index (every frame a key frame); with
//       options.audio a second stream ('auds', strf WAVEFORMAT PCM 16-bit) whose samples
//       follow each frame in '01wb' chunks (frame i gets samples [i*N/F, (i+1)*N/F) of N),
//       the first audio chunk flagged as a key frame in idx1;
//  WebP: animated, looping forever, each frame shown round(1000 / fps) ms, the parameters as
//       an EXIF UserComment chunk (as still WebP files carry them).
Result<std::vector<uint8_t>> encode_video(const std::vector<Image>& frames, VideoFormat format,
                                          const VideoWriteOptions& options = {});

// Writes `path` atomically with the format its extension names (.avi, .webp); a WebP with
// options.audio also writes the audio to audio_sidecar_path(path).
Status write_video(const std::string& path, const std::vector<Image>& frames,
                   const VideoWriteOptions& options = {});

// What write_video would refuse about `path` before any frame exists: an extension other
// than .avi/.webp, and every target core/output_file.h refuses.
Status check_video_output_path(const std::string& path);

// A decoded video (for tests and checks): RGB frames (RGBA for WebP with alpha), the frame
// rate the container states (AVI: rate / scale; WebP: from the first frame's duration, 0 for
// a still WebP, which libwebp makes of a single frame when that is smaller), each
// frame's duration in milliseconds and the embedded parameters text ("" when none).
struct DecodedVideo {
    VideoFormat format = VideoFormat::Avi;
    int width = 0;
    int height = 0;
    int fps = 0;
    std::vector<Image> frames;
    std::vector<int> durations_ms;
    std::string parameters;
    AudioTrack audio;  // AVI: the PCM stream when there is one (empty otherwise)
};

// The parameters text (ICMT) of an MJPEG AVI without decoding its frames: nullopt when it has
// none; an error when the data is no AVI or its structure is broken.
Result<std::optional<std::string>> decode_avi_parameters(const uint8_t* data, size_t size);
bool is_avi_data(const uint8_t* data, size_t size);  // RIFF....'AVI '

// Reads what encode_video writes: an MJPEG AVI (by its RIFF 'AVI ' header) or a WebP
// (animated or still, by RIFF 'WEBP'). Structural damage is an error naming what is wrong.
Result<DecodedVideo> decode_video(const uint8_t* data, size_t size);

}  // namespace ggdiff
