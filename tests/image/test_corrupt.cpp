// Damaged, foreign and oversized inputs give clear errors, never crashes.
#include "image/image_io.h"
#include "image/image_metadata.h"
#include "test_helpers.h"

namespace ggdiff {
namespace {

using test::noise_image;

std::string decode_error(const std::vector<uint8_t>& bytes) {
    auto r = decode_image(bytes);
    EXPECT_FALSE(r.ok());
    return r.ok() ? std::string() : r.status().message();
}

bool has(const std::string& msg, const std::string& s) {
    return msg.find(s) != std::string::npos;
}

std::vector<uint8_t> encoded(ImageFormat format, bool lossless = false) {
    ImageWriteOptions opt;
    opt.lossless = lossless;
    opt.parameters = "p\nSteps: 1, Sampler: Euler, Seed: 1";
    auto r = encode_image(noise_image(64, 64, 3), format, opt);
    EXPECT_TRUE(r.ok());
    return *r;
}

std::vector<uint8_t> cut(std::vector<uint8_t> v, size_t n) {
    v.resize(n);
    return v;
}

TEST(CorruptFiles, MissingEmptyAndDirectory) {
    const std::string dir = test::fresh_tmp_dir();
    auto r = read_image(dir + "/nope.png");
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(has(r.status().message(), "nope.png")) << r.status().message();
    EXPECT_TRUE(has(r.status().message(), "No such file")) << r.status().message();

    test::put_file(dir + "/empty.png", {});
    r = read_image(dir + "/empty.png");
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(has(r.status().message(), "empty")) << r.status().message();

    r = read_image(dir);
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(has(r.status().message(), "directory")) << r.status().message();

    auto p = read_image_parameters(dir + "/empty.png");
    ASSERT_FALSE(p.ok());
    EXPECT_TRUE(has(p.status().message(), "empty")) << p.status().message();
    EXPECT_FALSE(read_image_parameters(dir).ok());
}

// A chunk whose length runs past the end of the file is refused before libpng sees it: libpng
// allocates a text chunk's claimed length up front (a 290-byte file found by the image_decode
// fuzzer, tests/fuzz/crashes/image_decode/, claims a 1.8 GB zTXt and cost 1.8 GB of memory).
TEST(CorruptFiles, PngChunkLongerThanTheFile) {
    std::vector<uint8_t> png = encoded(ImageFormat::Png);
    // Right after IHDR (8 + 25 bytes): a zTXt chunk header claiming 1,828,716,717 bytes.
    const uint8_t ztxt[] = {0x6d, 0x00, 0x00, 0xad, 'z', 'T', 'X', 't', 'k', 0, 0, 'x'};
    png.insert(png.begin() + 33, std::begin(ztxt), std::end(ztxt));
    const std::string msg = decode_error(png);
    EXPECT_TRUE(has(msg, "chunk zTXt claims 1828716717 bytes")) << msg;
}

TEST(CorruptFiles, NotAnImage) {
    std::vector<uint8_t> random(1000);
    uint32_t x = 12345;
    for (auto& b : random) b = static_cast<uint8_t>((x = x * 1664525 + 1013904223) >> 24);
    random[0] = 'Q';
    std::string msg = decode_error(random);
    EXPECT_TRUE(has(msg, "not a PNG, JPEG or WebP image")) << msg;

    const std::string html = "<html><body>not found</body></html>";
    msg = decode_error(std::vector<uint8_t>(html.begin(), html.end()));
    EXPECT_TRUE(has(msg, "3c 68 74 6d")) << msg;

    const std::string gif = "GIF89a\x01\x00\x01\x00";
    msg = decode_error(std::vector<uint8_t>(gif.begin(), gif.end()));
    EXPECT_TRUE(has(msg, "GIF")) << msg;

    EXPECT_FALSE(decode_image(nullptr, 0).ok());
    auto p = decode_image_parameters(random.data(), random.size());
    ASSERT_FALSE(p.ok());
    EXPECT_TRUE(has(p.status().message(), "not a PNG")) << p.status().message();
}

TEST(CorruptFiles, TruncatedPng) {
    const auto png = encoded(ImageFormat::Png);
    for (size_t n : {size_t(8), size_t(20), size_t(33), png.size() / 2, png.size() - 12}) {
        const std::string msg = decode_error(cut(png, n));
        EXPECT_TRUE(has(msg, "PNG")) << n << ": " << msg;
        EXPECT_TRUE(has(msg, "truncated")) << n << ": " << msg;
    }
}

TEST(CorruptFiles, DamagedPngData) {
    auto png = encoded(ImageFormat::Png);
    png[png.size() / 2] ^= 0xFF;  // inside IDAT: CRC and/or zlib stream broken
    const std::string msg = decode_error(png);
    EXPECT_TRUE(has(msg, "PNG")) << msg;
}

TEST(CorruptFiles, TruncatedJpeg) {
    const auto jpg = encoded(ImageFormat::Jpeg);
    for (size_t n : {size_t(3), size_t(40), jpg.size() / 2, jpg.size() - 2}) {
        const std::string msg = decode_error(cut(jpg, n));
        EXPECT_TRUE(has(msg, "JPEG")) << n << ": " << msg;
    }
    EXPECT_TRUE(has(decode_error(cut(jpg, jpg.size() / 2)), "truncated"));
}

TEST(CorruptFiles, JpegWithGarbageAfterHeader) {
    std::vector<uint8_t> bytes = {0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10};
    for (int i = 0; i < 200; ++i) bytes.push_back(static_cast<uint8_t>(i * 37));
    const std::string msg = decode_error(bytes);
    EXPECT_TRUE(has(msg, "JPEG")) << msg;
}

TEST(CorruptFiles, TruncatedWebp) {
    for (bool lossless : {false, true}) {
        const auto webp = encoded(ImageFormat::WebP, lossless);
        for (size_t n : {size_t(12), size_t(30), webp.size() / 2}) {
            const std::string msg = decode_error(cut(webp, n));
            EXPECT_TRUE(has(msg, "WebP")) << n << ": " << msg;
        }
    }
}

TEST(CorruptFiles, TruncatedMetadataIsAnError) {
    const auto png = encoded(ImageFormat::Png);
    // Cut inside the first chunk after IHDR (the text chunk).
    const auto bytes = cut(png, 40);
    auto r = decode_image_parameters(bytes.data(), bytes.size());
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(has(r.status().message(), "truncated")) << r.status().message();

    const auto jpg = encoded(ImageFormat::Jpeg);
    const auto jcut = cut(jpg, 30);  // inside the EXIF segment
    r = decode_image_parameters(jcut.data(), jcut.size());
    EXPECT_FALSE(r.ok());
}

TEST(OversizedImages, RefusedBeforeAllocating) {
    // PNG: patch IHDR to 100000 x 100000 (CRC left wrong: our size check comes first).
    auto png = encoded(ImageFormat::Png);
    for (int i : {16, 20}) {
        png[i] = 0, png[i + 1] = 0x01, png[i + 2] = 0x86, png[i + 3] = 0xA0;  // 100000
    }
    std::string msg = decode_error(png);
    EXPECT_TRUE(has(msg, "100000x100000")) << msg;
    EXPECT_TRUE(has(msg, "limit")) << msg;

    // JPEG: patch the SOF0 frame header to 60000 x 60000.
    auto jpg = encoded(ImageFormat::Jpeg);
    bool patched = false;
    for (size_t i = 2; i + 9 < jpg.size(); ++i) {
        if (jpg[i] == 0xFF && jpg[i + 1] == 0xC0) {
            jpg[i + 5] = 0xEA, jpg[i + 6] = 0x60, jpg[i + 7] = 0xEA, jpg[i + 8] = 0x60;
            patched = true;
            break;
        }
    }
    ASSERT_TRUE(patched);
    msg = decode_error(jpg);
    EXPECT_TRUE(has(msg, "60000x60000")) << msg;

    // WebP lossless: patch the VP8L header to 16384 x 16384 (over the pixel limit).
    ImageWriteOptions opt;
    opt.lossless = true;
    auto webp = *encode_image(noise_image(16, 16, 3), ImageFormat::WebP, opt);
    ASSERT_EQ(std::string(webp.begin() + 12, webp.begin() + 16), "VP8L");
    uint32_t bits = webp[21] | webp[22] << 8 | webp[23] << 16 | uint32_t(webp[24]) << 24;
    bits = (bits & 0xF0000000u) | 16383u | (16383u << 14);
    for (int i = 0; i < 4; ++i) webp[21 + i] = static_cast<uint8_t>(bits >> (8 * i));
    msg = decode_error(webp);
    EXPECT_TRUE(has(msg, "16384x16384")) << msg;
}

TEST(OversizedImages, DimensionChecks) {
    EXPECT_TRUE(check_image_dimensions(16384, 8192).ok());
    EXPECT_FALSE(check_image_dimensions(16385, 1).ok());
    EXPECT_FALSE(check_image_dimensions(16384, 16384).ok());  // 268M pixels > 256M
    EXPECT_FALSE(check_image_dimensions(0, 5).ok());
    EXPECT_FALSE(check_image_dimensions(5, -1).ok());
}

}  // namespace
}  // namespace ggdiff

namespace ggdiff {
namespace {

// Byte flips, truncations and splices of valid files: every result is a value, no crash.
// (Run under ASan/UBSan for the real check; GGDIFF_FUZZ_ROUNDS raises the count.)
TEST(CorruptFiles, MutatedInputsNeverCrash) {
    const char* env = std::getenv("GGDIFF_FUZZ_ROUNDS");
    const int rounds = env ? std::atoi(env) : 150;
    uint32_t state = 2024;
    const auto next = [&] { return state = state * 1664525u + 1013904223u; };
    ImageWriteOptions opt;
    opt.parameters = "a cat\nSteps: 20, Sampler: Euler, CFG scale: 7, Seed: 1, Size: 24x16";
    std::vector<std::vector<uint8_t>> seeds;
    for (ImageFormat f : {ImageFormat::Png, ImageFormat::Jpeg, ImageFormat::WebP}) {
        seeds.push_back(*encode_image(noise_image(24, 16, 3), f, opt));
        seeds.push_back(*encode_image(noise_image(24, 16, 4), f, opt));
    }
    opt.lossless = true;
    seeds.push_back(*encode_image(noise_image(24, 16, 4), ImageFormat::WebP, opt));
    for (const auto& seed : seeds) {
        for (int r = 0; r < rounds; ++r) {
            std::vector<uint8_t> m = seed;
            const int flips = 1 + static_cast<int>(next() % 4);
            for (int k = 0; k < flips; ++k)
                m[next() % m.size()] ^= static_cast<uint8_t>(next() >> 24);
            if (next() % 4 == 0) m.resize(1 + next() % m.size());
            if (m.size() > 12 && next() % 8 == 0) m[12 + next() % (m.size() - 12)] = 0xFF;
            auto img = decode_image(m);
            if (img.ok()) {
                EXPECT_TRUE(validate_image(*img).ok());
            } else {
                EXPECT_FALSE(img.status().message().empty());
            }
            auto p = decode_image_parameters(m.data(), m.size());
            if (!p.ok()) {
                EXPECT_FALSE(p.status().message().empty());
            }
        }
    }
}

}  // namespace
}  // namespace ggdiff
