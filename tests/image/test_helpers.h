// Shared helpers for the image tests: temp dirs, synthetic images, file bytes.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "../support/scratch.h"
#include "image/image.h"

namespace ggdiff::test {

// A fresh, empty directory under GGDIFF_TEST_TMP named after the running test, removed when
// it passes.
inline std::string fresh_tmp_dir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    return ggdiff::scratch::fresh(std::string(GGDIFF_TEST_TMP) + "/" + info->test_suite_name() +
                                  "." + info->name());
}

// Smooth content (compresses well, survives JPEG nearly unchanged).
inline Image gradient_image(int w, int h, int channels) {
    Image img;
    img.width = w;
    img.height = h;
    img.channels = channels;
    img.pixels.resize(img.byte_size());
    for (int y = 0; y < h; ++y) {
        for (int x = 0; x < w; ++x) {
            uint8_t* p = &img.pixels[(static_cast<size_t>(y) * w + x) * channels];
            const int v[4] = {x * 255 / (w - 1), y * 255 / (h - 1), (x + y) * 255 / (w + h - 2),
                              255 - x * 200 / (w - 1)};
            for (int c = 0; c < channels; ++c) p[c] = static_cast<uint8_t>(v[c]);
        }
    }
    return img;
}

// Random content (for exact lossless round trips).
inline Image noise_image(int w, int h, int channels, uint32_t seed = 1) {
    Image img;
    img.width = w;
    img.height = h;
    img.channels = channels;
    img.pixels.resize(img.byte_size());
    std::mt19937 rng(seed);
    for (auto& b : img.pixels) b = static_cast<uint8_t>(rng() >> 24);
    return img;
}

inline std::vector<uint8_t> file_bytes(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

inline void put_file(const std::string& path, const std::vector<uint8_t>& bytes) {
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

inline std::vector<std::string> dir_entries(const std::string& dir) {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
        names.push_back(e.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
}

inline double mean_abs_diff(const Image& a, const Image& b) {
    if (a.pixels.size() != b.pixels.size() || a.pixels.empty()) return 1e9;
    double sum = 0;
    for (size_t i = 0; i < a.pixels.size(); ++i)
        sum += std::abs(int(a.pixels[i]) - int(b.pixels[i]));
    return sum / static_cast<double>(a.pixels.size());
}

inline bool contains(const std::vector<uint8_t>& hay, const std::string& needle) {
    return std::search(hay.begin(), hay.end(), needle.begin(), needle.end()) != hay.end();
}

}  // namespace ggdiff::test
