// Audio output: 16-bit PCM WAV files, PCM audio muxed into MJPEG AVI, and the .wav sidecar
// next to a WebP video (which cannot carry sound). Files are parsed byte by byte.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "image/video_io.h"
#include "image/wav.h"
#include "test_helpers.h"

namespace ggdiff {
namespace {

uint32_t le16(const std::vector<uint8_t>& b, size_t at) {
    return uint32_t(b[at]) | uint32_t(b[at + 1]) << 8;
}
uint32_t le32(const std::vector<uint8_t>& b, size_t at) {
    return le16(b, at) | le16(b, at + 2) << 16;
}
bool id_at(const std::vector<uint8_t>& b, size_t at, const char* id) {
    return at + 4 <= b.size() && std::memcmp(&b[at], id, 4) == 0;
}
size_t find(const std::vector<uint8_t>& b, const char* id, size_t from = 0) {
    for (size_t i = from; i + 4 <= b.size(); ++i)
        if (id_at(b, i, id)) return i;
    return std::string::npos;
}

// A stereo 440/660 Hz tone at `rate` Hz lasting `frames` sample frames.
AudioTrack tone(int rate, size_t frames, int channels = 2) {
    AudioTrack a;
    a.sample_rate = rate;
    a.channels = channels;
    a.samples.resize(frames * channels);
    for (size_t i = 0; i < frames; ++i)
        for (int c = 0; c < channels; ++c)
            a.samples[i * channels + c] =
                0.5f * std::sin(2.0f * 3.14159265f * (440.0f + 220.0f * c) * i / rate);
    return a;
}

Image solid(int w, int h, uint8_t v) {
    Image img;
    img.width = w;
    img.height = h;
    img.channels = 3;
    img.pixels.assign(img.byte_size(), v);
    return img;
}

TEST(WavWriter, CanonicalHeaderAndChunkSizes) {
    const AudioTrack a = tone(24000, 1001);
    auto wav = encode_wav(a);
    ASSERT_TRUE(wav.ok()) << wav.status().message();
    const std::vector<uint8_t>& b = *wav;
    ASSERT_EQ(b.size(), 44u + 1001u * 4u);
    EXPECT_TRUE(id_at(b, 0, "RIFF"));
    EXPECT_EQ(le32(b, 4), b.size() - 8);
    EXPECT_TRUE(id_at(b, 8, "WAVE"));
    EXPECT_TRUE(id_at(b, 12, "fmt "));
    EXPECT_EQ(le32(b, 16), 16u);
    EXPECT_EQ(le16(b, 20), 1u);           // PCM
    EXPECT_EQ(le16(b, 22), 2u);           // channels
    EXPECT_EQ(le32(b, 24), 24000u);       // sample rate
    EXPECT_EQ(le32(b, 28), 24000u * 4u);  // bytes per second
    EXPECT_EQ(le16(b, 32), 4u);           // block align
    EXPECT_EQ(le16(b, 34), 16u);          // bits per sample
    EXPECT_TRUE(id_at(b, 36, "data"));
    EXPECT_EQ(le32(b, 40), 1001u * 4u);  // = sample count * block align
}

TEST(WavWriter, SamplesAreClampedAndRoundedAsTheReference) {
    AudioTrack a;
    a.sample_rate = 16000;
    a.channels = 1;
    a.samples = {0.0f, 1.0f, -1.0f, 2.5f, -7.0f, 0.5f, -0.25f, 1e-5f, NAN};
    auto wav = encode_wav(a);
    ASSERT_TRUE(wav.ok());
    const int16_t want[] = {0, 32767, -32767, 32767, -32767, 16384, -8192, 0, 0};
    for (size_t i = 0; i < 9; ++i) {
        EXPECT_EQ(static_cast<int16_t>(le16(*wav, 44 + 2 * i)), want[i]) << "sample " << i;
    }
}

TEST(WavWriter, RoundTripWithinOneStep) {
    const AudioTrack a = tone(44100, 777);
    auto wav = encode_wav(a);
    ASSERT_TRUE(wav.ok());
    auto back = decode_wav(wav->data(), wav->size());
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(back->sample_rate, 44100);
    EXPECT_EQ(back->channels, 2);
    ASSERT_EQ(back->sample_count(), 777u);
    for (size_t i = 0; i < a.samples.size(); ++i)
        ASSERT_NEAR(back->samples[i], a.samples[i], 0.5f / 32767 + 1e-6f) << i;
}

TEST(WavWriter, BadTracksAreRefusedWithTheReason) {
    AudioTrack a = tone(24000, 10);
    a.samples.pop_back();
    auto r = encode_wav(a);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("whole frames"), std::string::npos);
    a = tone(24000, 10);
    a.channels = 0;
    EXPECT_FALSE(encode_wav(a).ok());
    a = tone(24000, 10);
    a.sample_rate = 10;
    EXPECT_NE(encode_wav(a).status().message().find("sample rate"), std::string::npos);
    a.samples.clear();
    a.sample_rate = 24000;
    EXPECT_FALSE(encode_wav(a).ok());
    const std::vector<uint8_t> junk = {'R', 'I', 'F', 'F', 0, 0, 0, 0, 'W', 'A', 'V', 'E'};
    EXPECT_FALSE(decode_wav(junk.data(), junk.size()).ok());
}

TEST(WavWriter, WritesAFileAtomically) {
    const std::string dir = test::fresh_tmp_dir();
    const AudioTrack a = tone(24000, 240);
    ASSERT_TRUE(write_wav(dir + "/a.wav", a).ok());
    EXPECT_EQ(std::filesystem::file_size(dir + "/a.wav"), 44u + 240u * 4u);
    EXPECT_FALSE(write_wav(dir + "/no/such/dir/a.wav", a).ok());
}

TEST(WavWriter, SidecarPathReplacesTheExtension) {
    EXPECT_EQ(audio_sidecar_path("out/video.webp"), "out/video.wav");
    EXPECT_EQ(audio_sidecar_path("out/video.WEBP"), "out/video.wav");
    EXPECT_EQ(audio_sidecar_path("out/frame.png"), "out/frame.wav");
    EXPECT_EQ(audio_sidecar_path("out.d/video"), "out.d/video.wav");
    EXPECT_EQ(audio_sidecar_path(".hidden"), ".hidden.wav");
}

TEST(AviAudio, SecondStreamHeadersSampleCountAndInterleavedChunks) {
    const std::vector<Image> frames = {solid(32, 16, 10), solid(32, 16, 120), solid(32, 16, 240)};
    const AudioTrack a = tone(24000, 3001);  // not a multiple of the frame count
    VideoWriteOptions o;
    o.fps = 8;
    o.audio = &a;
    auto avi = encode_video(frames, VideoFormat::Avi, o);
    ASSERT_TRUE(avi.ok()) << avi.status().message();
    const std::vector<uint8_t>& b = *avi;
    EXPECT_EQ(le32(b, 4), b.size() - 8);
    // hdrl's size covers avih and both stream lists.
    const size_t hdrl = find(b, "hdrl");
    ASSERT_EQ(hdrl, 20u);
    const size_t hdrl_end = 20 + le32(b, 16);
    const size_t avih = find(b, "avih");
    EXPECT_EQ(le32(b, avih + 8 + 24), 2u);  // streams
    const size_t vstrh = find(b, "strh");
    const size_t astrh = find(b, "strh", vstrh + 8);
    ASSERT_NE(astrh, std::string::npos);
    ASSERT_LT(astrh, hdrl_end);
    EXPECT_TRUE(id_at(b, astrh - 4, "strl"));
    EXPECT_EQ(le32(b, astrh + 4), 56u);
    EXPECT_TRUE(id_at(b, astrh + 8, "auds"));
    EXPECT_EQ(le32(b, astrh + 8 + 20), 4u);          // scale = block align
    EXPECT_EQ(le32(b, astrh + 8 + 24), 24000u * 4);  // rate = bytes per second
    EXPECT_EQ(le32(b, astrh + 8 + 32), 3001u);       // length in sample frames
    EXPECT_EQ(le32(b, astrh + 8 + 44), 4u);          // sample size
    const size_t astrf = astrh + 8 + 56;
    ASSERT_TRUE(id_at(b, astrf, "strf"));
    EXPECT_EQ(le32(b, astrf + 4), 16u);
    EXPECT_EQ(le16(b, astrf + 8), 1u);       // PCM
    EXPECT_EQ(le16(b, astrf + 10), 2u);      // channels
    EXPECT_EQ(le32(b, astrf + 12), 24000u);  // sample rate
    EXPECT_EQ(le32(b, astrf + 16), 96000u);  // bytes per second
    EXPECT_EQ(le16(b, astrf + 20), 4u);      // block align
    EXPECT_EQ(le16(b, astrf + 22), 16u);     // bits
    EXPECT_EQ(astrf + 8 + 16, hdrl_end);     // the audio strl closes hdrl
    // movi: 00dc 01wb 00dc 01wb 00dc 01wb, audio split 1000/1000/1001, indexed in idx1.
    const size_t movi = find(b, "movi");
    const size_t idx1 = find(b, "idx1", movi);
    ASSERT_NE(idx1, std::string::npos);
    ASSERT_EQ(le32(b, idx1 + 4), 6u * 16u);
    const size_t want_frames[] = {1000, 1000, 1001};
    size_t audio_bytes = 0;
    for (int i = 0; i < 6; ++i) {
        const size_t e = idx1 + 8 + 16 * i;
        const char* id = i % 2 ? "01wb" : "00dc";
        EXPECT_TRUE(id_at(b, e, id)) << i;
        const size_t chunk = movi + le32(b, e + 8);
        EXPECT_TRUE(id_at(b, chunk, id)) << i;
        EXPECT_EQ(le32(b, chunk + 4), le32(b, e + 12));
        if (i % 2) {
            EXPECT_EQ(le32(b, e + 12), want_frames[i / 2] * 4) << i;
            EXPECT_EQ(le32(b, e + 4), i == 1 ? 0x10u : 0u);
            audio_bytes += le32(b, e + 12);
        }
    }
    EXPECT_EQ(audio_bytes, 3001u * 4u);
    EXPECT_EQ(idx1 + 8 + 96, b.size());
}

TEST(AviAudio, RoundTripKeepsFramesAndEverySample) {
    const std::vector<Image> frames = {solid(16, 16, 30), solid(16, 16, 200)};
    const AudioTrack a = tone(16000, 2345, 1);
    VideoWriteOptions o;
    o.fps = 25;
    o.audio = &a;
    auto avi = encode_video(frames, VideoFormat::Avi, o);
    ASSERT_TRUE(avi.ok());
    auto v = decode_video(avi->data(), avi->size());
    ASSERT_TRUE(v.ok()) << v.status().message();
    ASSERT_EQ(v->frames.size(), 2u);
    EXPECT_EQ(v->fps, 25);
    EXPECT_EQ(v->audio.sample_rate, 16000);
    EXPECT_EQ(v->audio.channels, 1);
    ASSERT_EQ(v->audio.sample_count(), 2345u);
    for (size_t i = 0; i < a.samples.size(); ++i)
        ASSERT_NEAR(v->audio.samples[i], a.samples[i], 0.5f / 32767 + 1e-6f) << i;
    // Without audio: one stream, no audio decoded.
    auto plain = encode_video(frames, VideoFormat::Avi, {});
    ASSERT_TRUE(plain.ok());
    EXPECT_EQ(find(*plain, "auds"), std::string::npos);
    auto pv = decode_video(plain->data(), plain->size());
    ASSERT_TRUE(pv.ok());
    EXPECT_TRUE(pv->audio.empty());
}

TEST(AviAudio, MoreFramesThanAudioSamplesSkipsEmptyChunks) {
    const std::vector<Image> frames(5, solid(8, 8, 90));
    const AudioTrack a = tone(8000, 2, 1);
    VideoWriteOptions o;
    o.audio = &a;
    auto avi = encode_video(frames, VideoFormat::Avi, o);
    ASSERT_TRUE(avi.ok());
    auto v = decode_video(avi->data(), avi->size());
    ASSERT_TRUE(v.ok()) << v.status().message();
    EXPECT_EQ(v->audio.sample_count(), 2u);
    EXPECT_EQ(le32(*avi, find(*avi, "idx1") + 4), (5u + 2u) * 16u);
}

TEST(AviAudio, BadAudioIsRefused) {
    AudioTrack a = tone(24000, 10);
    a.channels = 3;  // 20 samples do not fill frames of 3
    VideoWriteOptions o;
    o.audio = &a;
    auto r = encode_video({solid(8, 8, 1)}, VideoFormat::Avi, o);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("audio"), std::string::npos);
}

TEST(VideoAudioFiles, AviCarriesTheSoundWebPGetsAWavSidecar) {
    const std::string dir = test::fresh_tmp_dir();
    const std::vector<Image> frames = {solid(16, 16, 30), solid(16, 16, 200)};
    const AudioTrack a = tone(24000, 4800);
    VideoWriteOptions o;
    o.audio = &a;
    ASSERT_TRUE(write_video(dir + "/v.avi", frames, o).ok());
    EXPECT_FALSE(std::filesystem::exists(dir + "/v.wav"));
    ASSERT_TRUE(write_video(dir + "/w.webp", frames, o).ok());
    ASSERT_TRUE(std::filesystem::exists(dir + "/w.wav"));
    const std::vector<uint8_t> wav = test::file_bytes(dir + "/w.wav");
    auto back = decode_wav(wav.data(), wav.size());
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(back->sample_count(), 4800u);
    EXPECT_EQ(back->sample_rate, 24000);
}

}  // namespace
}  // namespace ggdiff
