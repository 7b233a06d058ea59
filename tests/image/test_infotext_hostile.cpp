// Infotext parsing is linear-time, and the linear scanner finds exactly the pairs A1111's
// regular expression finds.
#include <zlib.h>

#include <time.h>

#include <chrono>
#include <random>
#include <regex>

#include "image/image_metadata.h"
#include "image/infotext.h"
#include "test_helpers.h"

namespace ggdiff {
namespace {

#ifdef GGDIFF_SANITIZE
constexpr double kSlowdown = 10;
#else
constexpr double kSlowdown = 1;
#endif

using Pairs = std::vector<std::pair<std::string, std::string>>;

// A1111's expression through std::regex (ECMAScript agrees with Python's re on ASCII text
// without newlines); fine for short lines only.
Pairs regex_params(const std::string& line) {
    static const std::regex re(R"re(\s*(\w[\w \-/]+):\s*("(?:\\.|[^\\"])+"|[^,]*)(?:,|$))re");
    Pairs out;
    for (auto it = std::sregex_iterator(line.begin(), line.end(), re); it != std::sregex_iterator();
         ++it) {
        out.emplace_back((*it)[1].str(), (*it)[2].str());
    }
    return out;
}

// CPU time of this process: what the work costs, whatever else the machine is doing.
double cpu_now() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double seconds_since(double t0) {
    return cpu_now() - t0;
}

TEST(InfotextScanner, MatchesTheRegexOnRandomLines) {
    std::mt19937 rng(9);
    const std::string alphabet = "ab1_ :,\"\\-/x\t";
    for (int iter = 0; iter < 20000; ++iter) {
        std::string line;
        const size_t len = rng() % 24;
        for (size_t i = 0; i < len; ++i) line += alphabet[rng() % alphabet.size()];
        ASSERT_EQ(infotext_find_params(line), regex_params(line)) << "line: [" << line << "]";
    }
    EXPECT_EQ(regex_params("Steps: 20, Sampler: Euler a, CFG scale: 7").size(), 3u);
    for (const std::string line :
         {"Steps: 20, Sampler: Euler a, CFG scale: 7", R"(Lora hashes: "a: 1, b: 2", Seed: 1)",
          R"(k: "unterminated, x: 1)", R"(k: "esc\"aped", y: 2)", "  spaced key : v", "a: , b: c",
          "x:1,y:2,z:3"}) {
        EXPECT_EQ(infotext_find_params(line), regex_params(line)) << line;
    }
}

TEST(InfotextScanner, LongWordRunIsLinear) {
    // Issue 9: a parameters text ending in a 256 KB run of word characters took minutes.
    const std::string text = "a prompt\nSteps: 1, Seed: 2, " + std::string(256 * 1024, 'a');
    const double t0 = cpu_now();
    auto info = parse_infotext(text);
    ASSERT_TRUE(info.ok());
    auto json = format_metadata(text, "json");
    ASSERT_TRUE(json.ok());
    EXPECT_LT(seconds_since(t0), 0.5 * kSlowdown);
}

TEST(InfotextScanner, OtherPathologicalLinesAreLinear) {
    const size_t n = 256 * 1024;
    std::vector<std::string> lines = {
        std::string(n, ' ') + "x",       "k: " + std::string(n, '"'),
        "k: \"" + std::string(n, '\\'),  std::string(n / 2, 'a') + std::string(n / 2, ' '),
        "a" + std::string(n, '-') + "b",
    };
    std::string many_keys, quoted, repeated;
    for (int i = 0; i < 40000; ++i) many_keys += "key" + std::to_string(i) + ": v, ";
    for (int i = 0; i < 20000; ++i) quoted += "k" + std::to_string(i) + ": \"a, b, c\", ";
    for (int i = 0; i < 40000; ++i) repeated += "same key: v, ";
    lines.push_back(many_keys);
    lines.push_back(quoted);
    lines.push_back(repeated);
    for (const std::string& line : lines) {
        const double t0 = cpu_now();
        auto info = parse_infotext("prompt\n" + line);
        EXPECT_TRUE(info.ok());
        EXPECT_LT(seconds_since(t0), 0.5 * kSlowdown) << line.substr(0, 40);
    }
    auto info = parse_infotext("prompt\n" + many_keys);
    ASSERT_TRUE(info.ok());
    EXPECT_EQ(info->extra.size(), 40000u);
    info = parse_infotext("prompt\nSteps: 1, Seed: 2, " + repeated);
    ASSERT_TRUE(info.ok());
    ASSERT_EQ(info->extra.size(), 1u);
}

TEST(InfotextErrors, ValuesInMessagesAreEscapedAndShort) {
    auto r = parse_infotext("p\nSteps: x\x1b[2J" + std::string(5000, 'y') + ", Seed: 1, Size: 1x1");
    ASSERT_FALSE(r.ok());
    EXPECT_LT(r.status().message().size(), 300u);
    EXPECT_EQ(r.status().message().find('\x1b'), std::string::npos);
    EXPECT_NE(r.status().message().find("\\x1b[2J"), std::string::npos) << r.status().message();
}

// A PNG chunk's type is four bytes, not a C string: messages show just those four.
TEST(ImageMetadataErrors, ChunkTypeIsPrintedAsFourBytes) {
    const std::string sig = "\x89PNG\r\n\x1a\n";
    auto chunk = [](const std::string& type, const std::string& data, bool good_crc) {
        std::string c;
        const uint32_t n = static_cast<uint32_t>(data.size());
        for (int s = 24; s >= 0; s -= 8) c += static_cast<char>(n >> s);
        c += type + data;
        const std::string body = type + data;
        uint32_t crc =
            good_crc ? static_cast<uint32_t>(crc32(0L, reinterpret_cast<const Bytef*>(body.data()),
                                                   static_cast<uInt>(body.size())))
                     : 0;
        for (int s = 24; s >= 0; s -= 8) c += static_cast<char>(crc >> s);
        return c;
    };
    const std::string bad_itxt = sig + chunk("iTXt", std::string("parameters\0\x01", 12), true);
    auto r =
        decode_image_parameters(reinterpret_cast<const uint8_t*>(bad_itxt.data()), bad_itxt.size());
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("PNG iTXt chunk: "), std::string::npos)
        << r.status().message();
    const std::string bad_crc = sig + chunk("tEXt", std::string("parameters\0x", 12), false);
    r = decode_image_parameters(reinterpret_cast<const uint8_t*>(bad_crc.data()), bad_crc.size());
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("CRC mismatch in tEXt chunk"), std::string::npos)
        << r.status().message();
}

}  // namespace
}  // namespace ggdiff
