// The video calls of the C API (ggdiff_video_save / _encode / _check_path) as a C caller uses
// them: frames in, a file or bytes out, errors as codes with ggdiff_last_error() saying why.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "ggdiff.h"
#include "image/video_io.h"
#include "image/wav.h"

namespace {

namespace fs = std::filesystem;

struct Frames {
    std::vector<std::vector<unsigned char>> pixels;
    std::vector<ggdiff_image> images;
    std::string parameters = "a clip\nSteps: 2, Seed: 9";

    Frames(int n, int w, int h) {
        pixels.resize(static_cast<size_t>(n));
        for (int i = 0; i < n; ++i) {
            pixels[i].assign(static_cast<size_t>(w) * h * 3, 0);
            for (size_t p = static_cast<size_t>(i % 3); p < pixels[i].size(); p += 3)
                pixels[i][p] = 200;  // frame i: red, green, blue, ...
        }
        for (int i = 0; i < n; ++i) {
            ggdiff_image img{};
            img.width = w;
            img.height = h;
            img.channels = 3;
            img.data = pixels[i].data();
            img.seed = 9;
            img.parameters = i == 0 ? parameters.data() : nullptr;
            images.push_back(img);
        }
    }
};

std::string error() {
    return ggdiff_last_error();
}

TEST(CApiVideo, EncodeBothFormats) {
    Frames f(3, 32, 16);
    for (const char* format : {"avi", "webp", "AVI"}) {
        SCOPED_TRACE(format);
        unsigned char* bytes = nullptr;
        size_t size = 0;
        ASSERT_EQ(ggdiff_video_encode(f.images.data(), 3, 10, format, 90, &bytes, &size), 0)
            << error();
        ASSERT_NE(bytes, nullptr);
        auto v = ggdiff::decode_video(bytes, size);
        std::free(bytes);
        ASSERT_TRUE(v.ok()) << v.status().message();
        EXPECT_EQ(v->frames.size(), 3u);
        EXPECT_EQ(v->fps, 10);
        EXPECT_EQ(v->width, 32);
        EXPECT_EQ(v->parameters, f.parameters);
    }
    unsigned char* bytes = nullptr;
    size_t size = 0;
    EXPECT_NE(ggdiff_video_encode(f.images.data(), 3, 10, "webm", 90, &bytes, &size), 0);
    EXPECT_NE(error().find("no WebM encoder"), std::string::npos) << error();
    EXPECT_NE(ggdiff_video_encode(f.images.data(), 3, 10, "mp4", 90, &bytes, &size), 0);
    EXPECT_NE(ggdiff_video_encode(f.images.data(), 0, 10, "avi", 90, &bytes, &size), 0);
    EXPECT_NE(error().find("at least one frame"), std::string::npos) << error();
    EXPECT_NE(ggdiff_video_encode(f.images.data(), 3, 0, "avi", 90, &bytes, &size), 0);
    EXPECT_NE(error().find("fps 0"), std::string::npos) << error();
    EXPECT_NE(ggdiff_video_encode(f.images.data(), 3, 10, "avi", 101, &bytes, &size), 0);
    EXPECT_NE(ggdiff_video_encode(nullptr, 3, 10, "avi", 90, &bytes, &size), 0);
    EXPECT_EQ(bytes, nullptr);
    Frames mixed(2, 32, 16);
    mixed.images[1].height = 8;
    EXPECT_NE(ggdiff_video_encode(mixed.images.data(), 2, 10, "webp", 90, &bytes, &size), 0);
    EXPECT_NE(error().find("frame 1"), std::string::npos) << error();
    mixed.images[1].data = nullptr;
    EXPECT_NE(ggdiff_video_encode(mixed.images.data(), 2, 10, "webp", 90, &bytes, &size), 0);
    EXPECT_NE(error().find("frame 1 has no pixel data"), std::string::npos) << error();
}

// A sound track in memory: the AVI carries it as its PCM stream, the WAV bytes hold the same
// 16-bit samples, a WebP leaves it out; a bad track is refused by name.
TEST(CApiVideo, EncodeWithSoundAndWav) {
    Frames f(2, 16, 16);
    std::vector<float> samples(2 * 800);
    for (size_t i = 0; i < samples.size(); ++i) samples[i] = ((i * 37) % 200) / 100.0f - 1.0f;
    ggdiff_audio a{};
    a.sample_rate = 16000;
    a.channels = 2;
    a.frames = 800;
    a.samples = samples.data();

    unsigned char* wav_bytes = nullptr;
    size_t wav_size = 0;
    ASSERT_EQ(ggdiff_audio_encode_wav(&a, &wav_bytes, &wav_size), 0) << error();
    auto wav = ggdiff::decode_wav(wav_bytes, wav_size);
    std::free(wav_bytes);
    ASSERT_TRUE(wav.ok()) << wav.status().message();
    EXPECT_EQ(wav->sample_rate, 16000);
    EXPECT_EQ(wav->channels, 2);
    ASSERT_EQ(wav->samples.size(), samples.size());
    for (size_t i = 0; i < samples.size(); ++i)
        ASSERT_NEAR(wav->samples[i], samples[i], 1.0 / 16384) << "sample " << i;

    unsigned char* bytes = nullptr;
    size_t size = 0;
    ASSERT_EQ(ggdiff_video_encode_audio(f.images.data(), 2, 8, "avi", 40, &a, &bytes, &size), 0)
        << error();
    auto v = ggdiff::decode_video(bytes, size);
    std::free(bytes);
    ASSERT_TRUE(v.ok()) << v.status().message();
    EXPECT_EQ(v->frames.size(), 2u);
    EXPECT_EQ(v->audio.sample_rate, 16000);
    EXPECT_EQ(v->audio.samples, wav->samples) << "the AVI's PCM stream is not the WAV's track";

    ASSERT_EQ(ggdiff_video_encode_audio(f.images.data(), 2, 8, "webp", 90, &a, &bytes, &size), 0)
        << error();
    v = ggdiff::decode_video(bytes, size);
    std::free(bytes);
    ASSERT_TRUE(v.ok()) << v.status().message();
    EXPECT_TRUE(v->audio.empty());

    // No track: the plain video.
    ASSERT_EQ(ggdiff_video_encode_audio(f.images.data(), 2, 8, "avi", 90, nullptr, &bytes, &size),
              0)
        << error();
    v = ggdiff::decode_video(bytes, size);
    std::free(bytes);
    ASSERT_TRUE(v.ok()) << v.status().message();
    EXPECT_TRUE(v->audio.empty());

    ggdiff_audio bad = a;
    bad.channels = 0;
    bytes = nullptr;
    EXPECT_NE(ggdiff_video_encode_audio(f.images.data(), 2, 8, "avi", 90, &bad, &bytes, &size), 0);
    EXPECT_NE(error().find("0 channels"), std::string::npos) << error();
    EXPECT_EQ(bytes, nullptr);
    EXPECT_NE(ggdiff_audio_encode_wav(&bad, &bytes, &size), 0);
    EXPECT_NE(error().find("0 channels"), std::string::npos) << error();
    ggdiff_audio empty{};
    EXPECT_NE(ggdiff_audio_encode_wav(&empty, &bytes, &size), 0);
    EXPECT_NE(error().find("no audio samples"), std::string::npos) << error();
    EXPECT_NE(ggdiff_audio_encode_wav(nullptr, &bytes, &size), 0);
    EXPECT_EQ(bytes, nullptr);
}

TEST(CApiVideo, SaveAndCheckPath) {
    const std::string dir = GGDIFF_TEST_TMP "/c_api_video";
    fs::remove_all(dir);
    fs::create_directories(dir);
    Frames f(2, 16, 16);
    EXPECT_EQ(ggdiff_video_check_path((dir + "/a.avi").c_str()), 0) << error();
    EXPECT_EQ(ggdiff_video_check_path((dir + "/a.webp").c_str()), 0) << error();
    EXPECT_NE(ggdiff_video_check_path((dir + "/a.png").c_str()), 0);
    EXPECT_NE(ggdiff_video_check_path((dir + "/a.webm").c_str()), 0);
    EXPECT_NE(ggdiff_video_check_path((dir + "/missing/a.avi").c_str()), 0);
    EXPECT_NE(ggdiff_video_check_path(dir.c_str()), 0);
    EXPECT_NE(ggdiff_video_check_path(nullptr), 0);

    ASSERT_EQ(ggdiff_video_save(f.images.data(), 2, 8, (dir + "/a.avi").c_str(), 1), 0) << error();
    ASSERT_EQ(ggdiff_video_save(f.images.data(), 2, 8, (dir + "/b.webp").c_str(), 0), 0) << error();
    EXPECT_NE(ggdiff_video_save(f.images.data(), 2, 500, (dir + "/c.avi").c_str(), 1), 0);
    EXPECT_NE(ggdiff_video_save(f.images.data(), 2, 8, (dir + "/c.gif").c_str(), 1), 0);
    EXPECT_FALSE(fs::exists(dir + "/c.avi"));
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename());
    std::sort(names.begin(), names.end());
    EXPECT_EQ(names, (std::vector<std::string>{"a.avi", "b.webp"}));  // no temporary files
}

}  // namespace
