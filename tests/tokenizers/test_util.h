// Shared helpers for the tokenizer tests.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "../support/scratch.h"
#include "tokenizers/clip_tokenizer.h"

namespace ggdiff::test {

inline std::string clip_merges_path() {
    return std::string(GGDIFF_SHARED_DIR) + "/data/clip/merges.txt";
}

// The real CLIP tokenizer, loaded once for the whole suite.
inline const ClipTokenizer& clip() {
    static const ClipTokenizer* tok = [] {
        auto r = ClipTokenizer::from_merges_file(clip_merges_path());
        if (!r) {
            ADD_FAILURE() << r.status().message();
            std::abort();
        }
        return new ClipTokenizer(std::move(r).value());
    }();
    return *tok;
}

// A fresh, empty folder under the test tmp dir, removed when the test passes.
inline std::filesystem::path fresh_dir(const std::string& name) {
    return ggdiff::scratch::fresh((std::filesystem::path(GGDIFF_TEST_TMP) / name).string());
}

inline void write_file(const std::filesystem::path& path, const std::string& text) {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream out(path, std::ios::binary);
    out << text;
}

inline std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace ggdiff::test
