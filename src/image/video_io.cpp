// MJPEG AVI written and read here byte by byte; animated WebP through libwebp's
// WebPAnimEncoder (libwebpmux, which also adds the EXIF chunk) and WebPAnimDecoder
// (libwebpdemux).
#include "image/video_io.h"

#include <webp/demux.h>
#include <webp/encode.h>
#include <webp/mux.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>

#include "core/log.h"
#include "core/safe_text.h"
#include "image/codecs.h"
#include "image/exif.h"
#include "image/file_io.h"
#include "image/image_metadata.h"

namespace ggdiff {

namespace {

std::string lower_extension(const std::string& path) {
    const size_t slash = path.find_last_of('/');
    const size_t dot = path.find_last_of('.');
    if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
    std::string ext = path.substr(dot);
    for (char& c : ext) {
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
    return ext;
}

Status check_frames(const std::vector<Image>& frames, const VideoWriteOptions& options) {
    if (frames.empty()) return Status::Error("a video needs at least one frame");
    if (frames.size() > static_cast<size_t>(kMaxVideoFrames)) {
        return Status::Error(string_format("%zu frames exceed the limit of %d per video",
                                           frames.size(), kMaxVideoFrames));
    }
    if (options.fps < kMinVideoFps || options.fps > kMaxVideoFps) {
        return Status::Error(
            string_format("fps %d is not in %d..%d", options.fps, kMinVideoFps, kMaxVideoFps));
    }
    if (options.quality < 1 || options.quality > 100) {
        return Status::Error(string_format("video quality %d is not in 1..100", options.quality));
    }
    for (size_t i = 0; i < frames.size(); ++i) {
        GGDIFF_TRY(validate_image(frames[i]).with_context(string_format("frame %zu", i)));
        if (frames[i].width != frames[0].width || frames[i].height != frames[0].height) {
            return Status::Error(string_format(
                "frame %zu is %dx%d, frame 0 is %dx%d: all frames "
                "of a video must have one size",
                i, frames[i].width, frames[i].height, frames[0].width, frames[0].height));
        }
    }
    return Status::Ok();
}

// ---- AVI -----------------------------------------------------------------------------

constexpr uint32_t kAvifHasIndex = 0x10;
constexpr uint32_t kAvifIsInterleaved = 0x100;
constexpr uint32_t kAviifKeyframe = 0x10;

class RiffWriter {
  public:
    std::vector<uint8_t> bytes;

    void u16(uint32_t v) { put(v, 2); }
    void u32(uint32_t v) { put(v, 4); }
    void fourcc(const char* f) { bytes.insert(bytes.end(), f, f + 4); }
    // Starts a chunk (or a LIST/RIFF with its type); returns where its size goes.
    size_t open(const char* id, const char* list_type = nullptr) {
        fourcc(id);
        const size_t at = bytes.size();
        u32(0);
        if (list_type) fourcc(list_type);
        return at;
    }
    // Fills in the size of the chunk opened at `at` and pads it to an even length.
    void close(size_t at) {
        const size_t size = bytes.size() - at - 4;
        for (int i = 0; i < 4; ++i) bytes[at + i] = static_cast<uint8_t>(size >> (8 * i));
        if (size & 1) bytes.push_back(0);
    }
    void chunk(const char* id, const uint8_t* data, size_t size) {
        const size_t at = open(id);
        bytes.insert(bytes.end(), data, data + size);
        close(at);
    }

  private:
    void put(uint32_t v, int n) {
        for (int i = 0; i < n; ++i) bytes.push_back(static_cast<uint8_t>(v >> (8 * i)));
    }
};

Result<std::vector<uint8_t>> encode_avi(const std::vector<Image>& frames,
                                        const VideoWriteOptions& options) {
    const uint32_t w = static_cast<uint32_t>(frames[0].width);
    const uint32_t h = static_cast<uint32_t>(frames[0].height);
    const uint32_t n = static_cast<uint32_t>(frames.size());
    std::vector<std::vector<uint8_t>> jpegs;
    jpegs.reserve(frames.size());
    size_t largest = 0, total = 0;
    for (size_t i = 0; i < frames.size(); ++i) {
        const Image* rgb = &frames[i];
        Image converted;
        if (rgb->channels != 3) {
            converted = convert_channels(*rgb, 3);
            rgb = &converted;
        }
        Result<std::vector<uint8_t>> jpeg = codec::encode_jpeg(*rgb, options.quality, "");
        if (!jpeg.ok()) return jpeg.status().with_context(string_format("frame %zu", i));
        largest = std::max(largest, jpeg->size());
        total += jpeg->size() + 8 + 16 + 1;
        jpegs.push_back(std::move(*jpeg));
    }
    const AudioTrack* audio = options.audio && !options.audio->empty() ? options.audio : nullptr;
    const size_t audio_frames = audio ? audio->sample_count() : 0;
    const uint32_t block_align = audio ? static_cast<uint32_t>(audio->channels) * 2 : 0;
    if (audio) total += audio_frames * block_align + n * 25;
    // AVI 1.0 keeps every size and offset in 32 bits.
    if (total + options.parameters.size() + 4096 > 0xffffffffull) {
        return Status::Error("AVI: the video exceeds the format's 4 GiB limit");
    }

    RiffWriter r;
    const size_t riff = r.open("RIFF", "AVI ");
    const size_t hdrl = r.open("LIST", "hdrl");
    const size_t avih = r.open("avih");
    r.u32(static_cast<uint32_t>(std::lround(1e6 / options.fps)));  // microseconds per frame
    r.u32(static_cast<uint32_t>(std::min<size_t>(largest * options.fps, 0xffffffffu)));
    r.u32(0);  // padding granularity
    r.u32(kAvifHasIndex | kAvifIsInterleaved);
    r.u32(n);              // total frames
    r.u32(0);              // initial frames
    r.u32(audio ? 2 : 1);  // streams
    r.u32(static_cast<uint32_t>(largest));
    r.u32(w);
    r.u32(h);
    for (int i = 0; i < 4; ++i) r.u32(0);  // reserved
    r.close(avih);
    const size_t strl = r.open("LIST", "strl");
    const size_t strh = r.open("strh");
    r.fourcc("vids");
    r.fourcc("MJPG");
    r.u32(0);  // flags
    r.u16(0);  // priority
    r.u16(0);  // language
    r.u32(0);  // initial frames
    r.u32(1);  // scale: rate / scale = frames per second
    r.u32(static_cast<uint32_t>(options.fps));
    r.u32(0);  // start
    r.u32(n);  // length in frames
    r.u32(static_cast<uint32_t>(largest));
    r.u32(0xffffffffu);  // quality: the default
    r.u32(0);            // sample size: varies
    r.u16(0);            // rcFrame left, top, right, bottom
    r.u16(0);
    r.u16(w);
    r.u16(h);
    r.close(strh);
    const size_t strf = r.open("strf");  // BITMAPINFOHEADER
    r.u32(40);
    r.u32(w);
    r.u32(h);
    r.u16(1);   // planes
    r.u16(24);  // bits per pixel once decoded
    r.fourcc("MJPG");
    r.u32(w * h * 3);
    for (int i = 0; i < 4; ++i) r.u32(0);  // resolution and palette
    r.close(strf);
    r.close(strl);
    if (audio) {
        const uint32_t rate = static_cast<uint32_t>(audio->sample_rate);
        const size_t astrl = r.open("LIST", "strl");
        const size_t astrh = r.open("strh");
        r.fourcc("auds");
        r.u32(0);                   // handler: none for PCM
        r.u32(0);                   // flags
        r.u16(0);                   // priority
        r.u16(0);                   // language
        r.u32(0);                   // initial frames
        r.u32(block_align);         // scale: rate / scale = sample frames per second
        r.u32(rate * block_align);  // rate: bytes per second
        r.u32(0);                   // start
        r.u32(static_cast<uint32_t>(audio_frames));  // length in sample frames
        r.u32(static_cast<uint32_t>(
            std::min<size_t>(audio_frames * block_align / n + block_align, 0xffffffffu)));
        r.u32(0xffffffffu);  // quality: the default
        r.u32(block_align);  // sample size
        for (int i = 0; i < 4; ++i) r.u16(0);
        r.close(astrh);
        const size_t astrf = r.open("strf");  // WAVEFORMAT
        r.u16(1);                             // PCM
        r.u16(static_cast<uint32_t>(audio->channels));
        r.u32(rate);
        r.u32(rate * block_align);
        r.u16(block_align);
        r.u16(16);  // bits per sample
        r.close(astrf);
        r.close(astrl);
    }
    r.close(hdrl);

    const size_t info = r.open("LIST", "INFO");
    static const char kSoftware[] = "ggdiff";
    r.chunk("ISFT", reinterpret_cast<const uint8_t*>(kSoftware), sizeof kSoftware);
    if (!options.parameters.empty()) {
        // Zero-terminated UTF-8, as INFO strings are.
        r.chunk("ICMT", reinterpret_cast<const uint8_t*>(options.parameters.c_str()),
                options.parameters.size() + 1);
    }
    r.close(info);

    const size_t movi = r.open("LIST", "movi");
    const size_t movi_start = movi + 4;  // idx1 offsets count from the 'movi' type
    struct IndexEntry {
        const char* id;
        uint32_t flags, offset, size;
    };
    std::vector<IndexEntry> index;
    index.reserve(audio ? 2 * n : n);
    for (uint32_t i = 0; i < n; ++i) {
        const std::vector<uint8_t>& jpeg = jpegs[i];
        index.push_back({"00dc", kAviifKeyframe, static_cast<uint32_t>(r.bytes.size() - movi_start),
                         static_cast<uint32_t>(jpeg.size())});
        r.chunk("00dc", jpeg.data(), jpeg.size());
        if (!audio) continue;
        // Interleaved: the samples that play during frame i follow it.
        const size_t begin = audio_frames * i / n;
        const size_t end = i + 1 == n ? audio_frames : audio_frames * (i + 1) / n;
        if (end <= begin) continue;
        const std::vector<uint8_t> pcm = audio_to_pcm16(*audio, begin, end - begin);
        index.push_back({"01wb", begin == 0 ? kAviifKeyframe : 0,
                         static_cast<uint32_t>(r.bytes.size() - movi_start),
                         static_cast<uint32_t>(pcm.size())});
        r.chunk("01wb", pcm.data(), pcm.size());
    }
    r.close(movi);

    const size_t idx1 = r.open("idx1");
    for (const IndexEntry& e : index) {
        r.fourcc(e.id);
        r.u32(e.flags);
        r.u32(e.offset);
        r.u32(e.size);
    }
    r.close(idx1);
    r.close(riff);
    return std::move(r.bytes);
}

uint32_t le32(const uint8_t* p) {
    return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

bool is_id(const uint8_t* p, const char* id) {
    return std::memcmp(p, id, 4) == 0;
}

struct AviScan {
    bool have_avih = false;
    bool have_strh = false;
    std::string last_stream;  // the type of the strh the next strf describes
    bool have_audio = false;
    uint32_t audio_format = 0, audio_channels = 0, audio_rate = 0, audio_bits = 0;
    std::vector<std::pair<size_t, size_t>> audio_chunks;  // offset, size of each PCM chunk
    uint32_t width = 0, height = 0, frames = 0;
    uint32_t micro_per_frame = 0, rate = 0, scale = 0;
    std::string comment;
    std::vector<std::pair<size_t, size_t>> frame_chunks;  // offset, size of each JPEG
};

// Walks the chunks in [begin, end): lists are entered, the chunks we need are read.
Status scan_avi(const uint8_t* data, size_t begin, size_t end, AviScan& s, int depth) {
    if (depth > 8) return Status::Error("AVI: lists nested too deeply");
    size_t pos = begin;
    while (pos + 8 <= end) {
        const uint8_t* c = data + pos;
        const size_t size = le32(c + 4);
        if (size > end - pos - 8) {
            return Status::Error(string_format("AVI: chunk at byte %zu runs past its list", pos));
        }
        const size_t body = pos + 8;
        if (is_id(c, "LIST")) {
            if (size < 4) return Status::Error("AVI: LIST without a type");
            GGDIFF_TRY(scan_avi(data, body + 4, body + size, s, depth + 1));
        } else if (is_id(c, "avih")) {
            if (size < 40) return Status::Error("AVI: avih too short");
            s.have_avih = true;
            s.micro_per_frame = le32(data + body);
            s.frames = le32(data + body + 16);
            s.width = le32(data + body + 32);
            s.height = le32(data + body + 36);
        } else if (is_id(c, "strh")) {
            if (size < 36) return Status::Error("AVI: strh too short");
            s.last_stream.assign(reinterpret_cast<const char*>(data + body), 4);
            if (!s.have_strh && is_id(data + body, "vids")) {
                s.have_strh = true;
                s.scale = le32(data + body + 20);
                s.rate = le32(data + body + 24);
            }
        } else if (is_id(c, "strf") && s.last_stream == "auds" && !s.have_audio) {
            if (size < 16) return Status::Error("AVI: audio strf too short");
            s.have_audio = true;
            s.audio_format = le32(data + body) & 0xffff;
            s.audio_channels = le32(data + body) >> 16;
            s.audio_rate = le32(data + body + 4);
            s.audio_bits = le32(data + body + 12) >> 16;
        } else if (is_id(c, "01wb")) {
            s.audio_chunks.emplace_back(body, size);
        } else if (is_id(c, "ICMT")) {
            const char* text = reinterpret_cast<const char*>(data + body);
            s.comment.assign(text, strnlen(text, size));
        } else if (is_id(c, "00dc") || is_id(c, "00db")) {
            s.frame_chunks.emplace_back(body, size);
        }
        pos = body + size + (size & 1);
    }
    return Status::Ok();
}

Result<DecodedVideo> decode_avi(const uint8_t* data, size_t size) {
    const size_t riff_size = le32(data + 4);
    const size_t end = std::min(size, riff_size + 8);
    AviScan s;
    GGDIFF_TRY(scan_avi(data, 12, end, s, 0));
    if (!s.have_avih || !s.have_strh) return Status::Error("AVI: no video stream header");
    if (s.frame_chunks.empty()) return Status::Error("AVI: no frames");
    DecodedVideo v;
    v.format = VideoFormat::Avi;
    v.width = static_cast<int>(s.width);
    v.height = static_cast<int>(s.height);
    v.fps = s.scale > 0 ? static_cast<int>(std::lround(double(s.rate) / s.scale)) : 0;
    v.parameters = s.comment;
    if (s.frames != s.frame_chunks.size()) {
        return Status::Error(string_format("AVI: the header says %u frames, the file holds %zu",
                                           s.frames, s.frame_chunks.size()));
    }
    if (s.have_audio) {
        if (s.audio_format != 1 || s.audio_bits != 16) {
            return Status::Error(
                string_format("AVI: audio format %u with %u bits is not read (16-bit PCM is)",
                              s.audio_format, s.audio_bits));
        }
        if (s.audio_channels < 1 || s.audio_channels > kMaxAudioChannels) {
            return Status::Error(string_format("AVI: audio with %u channels", s.audio_channels));
        }
        v.audio.channels = static_cast<int>(s.audio_channels);
        v.audio.sample_rate = static_cast<int>(s.audio_rate);
        for (const auto& [at, bytes] : s.audio_chunks) {
            for (size_t i = 0; i + 1 < bytes; i += 2) {
                const auto pcm = static_cast<int16_t>(data[at + i] | data[at + i + 1] << 8);
                v.audio.samples.push_back(pcm / 32767.0f);
            }
        }
        if (v.audio.samples.size() % s.audio_channels != 0) {
            return Status::Error("AVI: the audio stream ends inside a sample frame");
        }
    }
    const int duration = v.fps > 0 ? static_cast<int>(std::lround(1000.0 / v.fps)) : 0;
    for (size_t i = 0; i < s.frame_chunks.size(); ++i) {
        Result<Image> frame = codec::decode_jpeg(data + s.frame_chunks[i].first,
                                                 s.frame_chunks[i].second, kMaxImagePixels);
        if (!frame.ok()) return frame.status().with_context(string_format("AVI frame %zu", i));
        if (frame->width != v.width || frame->height != v.height) {
            return Status::Error(string_format("AVI: frame %zu is %dx%d, the header says %dx%d", i,
                                               frame->width, frame->height, v.width, v.height));
        }
        v.frames.push_back(std::move(*frame));
        v.durations_ms.push_back(duration);
    }
    return v;
}

// ---- Animated WebP ---------------------------------------------------------------------

struct AnimEncoderFree {
    void operator()(WebPAnimEncoder* e) const { WebPAnimEncoderDelete(e); }
};
struct MuxFree {
    void operator()(WebPMux* m) const { WebPMuxDelete(m); }
};
struct AnimDecoderFree {
    void operator()(WebPAnimDecoder* d) const { WebPAnimDecoderDelete(d); }
};

Result<std::vector<uint8_t>> encode_animated_webp(const std::vector<Image>& frames,
                                                  const VideoWriteOptions& options) {
    const int w = frames[0].width, h = frames[0].height;
    if (w > WEBP_MAX_DIMENSION || h > WEBP_MAX_DIMENSION) {
        return Status::Error(string_format("WebP: %dx%d exceeds the format's limit of %d per side",
                                           w, h, WEBP_MAX_DIMENSION));
    }
    WebPAnimEncoderOptions anim;
    WebPConfig config;
    if (!WebPAnimEncoderOptionsInit(&anim) || !WebPConfigInit(&config)) {
        return Status::Error("WebP: library version mismatch");
    }
    anim.anim_params.loop_count = 0;  // forever
    const bool lossless = options.quality >= 100;
    config.quality = static_cast<float>(options.quality);
    config.lossless = lossless ? 1 : 0;
    config.exact = lossless ? 1 : 0;
    if (!WebPValidateConfig(&config)) return Status::Error("WebP: invalid encoder settings");
    std::unique_ptr<WebPAnimEncoder, AnimEncoderFree> enc(WebPAnimEncoderNew(w, h, &anim));
    if (!enc) return Status::Error("WebP: cannot create the animation encoder (out of memory?)");

    const int duration = std::max(1, static_cast<int>(std::lround(1000.0 / options.fps)));
    int timestamp = 0;
    for (size_t i = 0; i < frames.size(); ++i) {
        const Image* src = &frames[i];
        Image converted;
        if (src->channels < 3) {
            converted = convert_channels(*src, src->channels + 2);
            src = &converted;
        }
        WebPPicture picture;
        if (!WebPPictureInit(&picture)) return Status::Error("WebP: library version mismatch");
        picture.use_argb = 1;
        picture.width = w;
        picture.height = h;
        const int stride = static_cast<int>(src->row_bytes());
        const int imported = src->channels == 4
                                 ? WebPPictureImportRGBA(&picture, src->pixels.data(), stride)
                                 : WebPPictureImportRGB(&picture, src->pixels.data(), stride);
        if (!imported) {
            WebPPictureFree(&picture);
            return Status::Error("WebP: out of memory");
        }
        const int added = WebPAnimEncoderAdd(enc.get(), &picture, timestamp, &config);
        WebPPictureFree(&picture);
        if (!added) {
            return Status::Error(string_format("WebP: cannot add frame %zu (%s)", i,
                                               WebPAnimEncoderGetError(enc.get())));
        }
        timestamp += duration;
    }
    // The end time of the last frame.
    if (!WebPAnimEncoderAdd(enc.get(), nullptr, timestamp, nullptr)) {
        return Status::Error(std::string("WebP: cannot finish the animation (") +
                             WebPAnimEncoderGetError(enc.get()) + ")");
    }
    WebPData assembled;
    WebPDataInit(&assembled);
    if (!WebPAnimEncoderAssemble(enc.get(), &assembled)) {
        return Status::Error(std::string("WebP: cannot assemble the animation (") +
                             WebPAnimEncoderGetError(enc.get()) + ")");
    }
    std::vector<uint8_t> out(assembled.bytes, assembled.bytes + assembled.size);
    WebPDataClear(&assembled);
    if (options.parameters.empty()) return out;

    // The parameters as an EXIF chunk, as still WebP files carry them.
    const WebPData whole = {out.data(), out.size()};
    std::unique_ptr<WebPMux, MuxFree> mux(WebPMuxCreate(&whole, 1));
    if (!mux) return Status::Error("WebP: cannot reopen the animation to add metadata");
    const std::vector<uint8_t> exif = make_exif_user_comment(options.parameters);
    const WebPData exif_data = {exif.data(), exif.size()};
    if (WebPMuxSetChunk(mux.get(), "EXIF", &exif_data, 1) != WEBP_MUX_OK) {
        return Status::Error("WebP: cannot add the EXIF metadata");
    }
    WebPData with_exif;
    WebPDataInit(&with_exif);
    if (WebPMuxAssemble(mux.get(), &with_exif) != WEBP_MUX_OK) {
        return Status::Error("WebP: cannot assemble the animation with metadata");
    }
    out.assign(with_exif.bytes, with_exif.bytes + with_exif.size);
    WebPDataClear(&with_exif);
    return out;
}

Result<DecodedVideo> decode_animated_webp(const uint8_t* data, size_t size) {
    WebPAnimDecoderOptions opts;
    if (!WebPAnimDecoderOptionsInit(&opts)) return Status::Error("WebP: library version mismatch");
    opts.color_mode = MODE_RGBA;
    opts.use_threads = 0;
    const WebPData in = {data, size};
    std::unique_ptr<WebPAnimDecoder, AnimDecoderFree> dec(WebPAnimDecoderNew(&in, &opts));
    if (!dec) return Status::Error("WebP: corrupt or truncated data");
    WebPAnimInfo info;
    if (!WebPAnimDecoderGetInfo(dec.get(), &info)) return Status::Error("WebP: no animation info");
    GGDIFF_TRY(check_image_dimensions(info.canvas_width, info.canvas_height));
    if (info.frame_count > static_cast<uint32_t>(kMaxVideoFrames)) {
        return Status::Error(string_format("WebP: %u frames exceed the limit of %d",
                                           info.frame_count, kMaxVideoFrames));
    }
    DecodedVideo v;
    v.format = VideoFormat::WebP;
    v.width = static_cast<int>(info.canvas_width);
    v.height = static_cast<int>(info.canvas_height);
    int previous = 0;
    bool alpha = false;
    std::vector<Image> rgba;
    while (WebPAnimDecoderHasMoreFrames(dec.get())) {
        uint8_t* buf = nullptr;
        int timestamp = 0;
        if (!WebPAnimDecoderGetNext(dec.get(), &buf, &timestamp)) {
            return Status::Error(string_format("WebP: frame %zu is corrupt", rgba.size()));
        }
        Image frame;
        frame.width = v.width;
        frame.height = v.height;
        frame.channels = 4;
        frame.pixels.assign(buf, buf + frame.byte_size());
        for (size_t i = 3; i < frame.pixels.size() && !alpha; i += 4)
            alpha = frame.pixels[i] != 255;
        rgba.push_back(std::move(frame));
        v.durations_ms.push_back(timestamp - previous);
        previous = timestamp;
    }
    if (rgba.empty()) return Status::Error("WebP: no frames");
    for (Image& f : rgba) v.frames.push_back(alpha ? std::move(f) : convert_channels(f, 3));
    v.fps = v.durations_ms[0] > 0 ? static_cast<int>(std::lround(1000.0 / v.durations_ms[0])) : 0;
    Result<std::optional<std::string>> params = decode_image_parameters(data, size);
    if (!params.ok()) return params.status();
    if (params->has_value()) v.parameters = **params;
    return v;
}

}  // namespace

const char* video_format_name(VideoFormat format) {
    return format == VideoFormat::Avi ? "avi" : "webp";
}

const char* video_format_mime_type(VideoFormat format) {
    return format == VideoFormat::Avi ? "video/x-msvideo" : "image/webp";
}

const char* video_format_extension(VideoFormat format) {
    return format == VideoFormat::Avi ? ".avi" : ".webp";
}

Result<VideoFormat> video_format_from_path(const std::string& path) {
    const std::string ext = lower_extension(path);
    if (ext == ".avi") return VideoFormat::Avi;
    if (ext == ".webp") return VideoFormat::WebP;
    if (ext == ".webm") {
        return Status::Error("cannot write video " + quote_name(path) +
                             ": .webm is not supported yet (no WebM encoder in this build); use "
                             ".avi or .webp");
    }
    return Status::Error(
        "cannot write video " + quote_name(path) + ": " +
        (ext.empty() ? std::string("no file extension") : "unknown extension " + quote_name(ext)) +
        " (use .avi or .webp)");
}

Result<VideoFormat> parse_video_format(const std::string& name) {
    std::string n = name;
    for (char& c : n) {
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
    if (n == "avi") return VideoFormat::Avi;
    if (n == "webp") return VideoFormat::WebP;
    if (n == "webm")
        return Status::Error("webm is not supported yet (no WebM encoder in this build)");
    return Status::Error("unknown video format " + quote_name(name) + " (use avi or webp)");
}

Result<std::vector<uint8_t>> encode_video(const std::vector<Image>& frames, VideoFormat format,
                                          const VideoWriteOptions& options) {
    GGDIFF_TRY(check_frames(frames, options).with_context("cannot encode video"));
    if (options.audio) {
        GGDIFF_TRY(validate_audio(*options.audio).with_context("cannot encode video"));
    }
    Result<std::vector<uint8_t>> out = format == VideoFormat::Avi
                                           ? encode_avi(frames, options)
                                           : encode_animated_webp(frames, options);
    if (!out.ok()) return out.status().with_context("cannot encode video");
    return out;
}

Status write_video(const std::string& path, const std::vector<Image>& frames,
                   const VideoWriteOptions& options) {
    Result<VideoFormat> format = video_format_from_path(path);
    if (!format.ok()) return format.status();
    const std::string context = "cannot write video " + quote_name(path);
    Result<std::vector<uint8_t>> bytes = encode_video(frames, *format, options);
    if (!bytes.ok()) return bytes.status().with_context(context);
    GGDIFF_TRY(write_file_atomic(path, bytes->data(), bytes->size()).with_context(context));
    if (options.audio && *format != VideoFormat::Avi) {
        // The container has no audio stream: the sound goes next to it, as the reference's.
        const std::string wav = audio_sidecar_path(path);
        GGDIFF_TRY(write_wav(wav, *options.audio));
        GGDIFF_LOG_INFO("%s cannot carry audio: the sound track is in %s",
                        video_format_name(*format), quote_name(wav).c_str());
    }
    return Status::Ok();
}

Status check_video_output_path(const std::string& path) {
    Result<VideoFormat> format = video_format_from_path(path);
    if (!format.ok()) return format.status();
    return check_output_target(path).with_context("cannot write video " + quote_name(path));
}

bool is_avi_data(const uint8_t* data, size_t size) {
    return data && size >= 12 && std::memcmp(data, "RIFF", 4) == 0 &&
           std::memcmp(data + 8, "AVI ", 4) == 0;
}

Result<std::optional<std::string>> decode_avi_parameters(const uint8_t* data, size_t size) {
    if (!is_avi_data(data, size)) return Status::Error("not an AVI file");
    AviScan s;
    GGDIFF_TRY(scan_avi(data, 12, std::min<size_t>(size, size_t{le32(data + 4)} + 8), s, 0));
    if (s.comment.empty()) return std::optional<std::string>();
    return std::optional<std::string>(s.comment);
}

Result<DecodedVideo> decode_video(const uint8_t* data, size_t size) {
    if (!data || size < 12 || std::memcmp(data, "RIFF", 4) != 0) {
        return Status::Error("not a video: no RIFF header");
    }
    if (std::memcmp(data + 8, "AVI ", 4) == 0) return decode_avi(data, size);
    if (std::memcmp(data + 8, "WEBP", 4) == 0) return decode_animated_webp(data, size);
    return Status::Error("not a video: a RIFF file of another kind");
}

}  // namespace ggdiff
