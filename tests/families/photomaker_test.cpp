// PhotoMaker's pure parts: the trigger word's expansion into copies of the class word, and
// the reference's ID embedding file (id_embeds.bin).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "families/sdxl/photomaker.h"

namespace {

using ggdiff::expand_trigger;
using ggdiff::read_id_embeds;

constexpr int kImg = 900;

TEST(PhotoMakerTrigger, RepeatsTheClassWordOncePerVector) {
    // "a woman img in space": the class word (7) takes the trigger word's place 3 times.
    const auto t = expand_trigger({1, 7, kImg, 4, 5}, {1.0f, 1.5f, 1.0f, 1.0f, 0.5f}, kImg, 3);
    EXPECT_TRUE(t.found);
    EXPECT_EQ(t.class_at, 1);
    EXPECT_EQ(t.tokens, (std::vector<int>{1, 7, 7, 7, 4, 5}));
    EXPECT_EQ(t.weights, (std::vector<float>{1.0f, 1.5f, 1.5f, 1.5f, 1.0f, 0.5f}));
}

TEST(PhotoMakerTrigger, MissingOrLeadingTriggerWord) {
    const auto none = expand_trigger({1, 7, 4}, {1, 1, 1}, kImg, 2);
    EXPECT_FALSE(none.found);
    EXPECT_EQ(none.class_at, -1);
    EXPECT_EQ(none.tokens, (std::vector<int>{1, 7, 4}));
    // The trigger word first: dropped, no class word (the reference's mask would then cover
    // BOS; ggdiff refuses the prompt).
    const auto first = expand_trigger({kImg, 7, 4}, {1, 1, 1}, kImg, 2);
    EXPECT_TRUE(first.found);
    EXPECT_EQ(first.class_at, -1);
    EXPECT_EQ(first.tokens, (std::vector<int>{7, 4}));
}

TEST(PhotoMakerTrigger, TheLastTriggerWordPlacesTheIdentity) {
    const auto t = expand_trigger({2, kImg, 3, kImg}, {1, 1, 1, 1}, kImg, 2);
    EXPECT_EQ(t.tokens, (std::vector<int>{2, 2, 3, 3}));
    EXPECT_EQ(t.class_at, 2);
}

std::string write_file(const std::string& name, const std::vector<char>& bytes) {
    const std::string path = ::testing::TempDir() + name;
    std::ofstream f(path, std::ios::binary);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return path;
}

template <typename T>
void put(std::vector<char>& out, T v) {
    const char* p = reinterpret_cast<const char*>(&v);
    out.insert(out.end(), p, p + sizeof(T));
}

TEST(PhotoMakerIdEmbeds, ReadsTheReferenceTensorFile) {
    std::vector<char> b;
    put<int32_t>(b, 2);
    put<int32_t>(b, 5);
    put<int32_t>(b, 0);
    put<int32_t>(b, 3);
    put<int32_t>(b, 2);
    for (char c : std::string("embed")) b.push_back(c);
    for (int i = 0; i < 6; ++i) put<float>(b, static_cast<float>(i) * 0.5f);
    auto t = read_id_embeds(write_file("pm_ok.bin", b));
    ASSERT_TRUE(t.ok()) << t.status().message();
    EXPECT_EQ(t->ne, (std::vector<int64_t>{3, 2}));
    EXPECT_FLOAT_EQ(t->data[5], 2.5f);
}

TEST(PhotoMakerIdEmbeds, BadFilesSayWhy) {
    EXPECT_NE(read_id_embeds("/nonexistent/id_embeds.bin").status().message().find("cannot open"),
              std::string::npos);
    std::vector<char> f16;
    put<int32_t>(f16, 1);
    put<int32_t>(f16, 0);
    put<int32_t>(f16, 1);  // F16
    put<int32_t>(f16, 4);
    EXPECT_NE(read_id_embeds(write_file("pm_f16.bin", f16)).status().message().find("(F32)"),
              std::string::npos);
    std::vector<char> cut;
    put<int32_t>(cut, 1);
    put<int32_t>(cut, 0);
    put<int32_t>(cut, 0);
    put<int32_t>(cut, 512);
    put<float>(cut, 1.0f);
    EXPECT_NE(read_id_embeds(write_file("pm_cut.bin", cut)).status().message().find("ends inside"),
              std::string::npos);
}

}  // namespace
