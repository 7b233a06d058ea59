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
