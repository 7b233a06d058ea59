// The A1111 "parameters" text through PNG, JPEG and WebP files.
#include <zlib.h>

#include <cstring>

#include "image/exif.h"
#include "image/image_io.h"
#include "image/image_metadata.h"
#include "test_helpers.h"

namespace ggdiff {
namespace {

using test::contains;
using test::gradient_image;
using test::noise_image;

const std::string kParams =
    "a photo of a cat, masterpiece\n"
    "Negative prompt: blurry, lowres\n"
    "Steps: 20, Sampler: Euler a, Schedule type: Karras, CFG scale: 7, Seed: 42, Size: 64x48, "
    "Model: sd_v1-5, Lora hashes: \"detail: 7c6bad76eb54, lcm: 1d5ce1ddf9d1\", Version: ggdiff "
    "0.1.0";
const std::string kUnicodeParams =
    "caf\xc3\xa9 au lait, \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e, \xf0\x9f\x8e\xa8 palette\n"
    "Steps: 4, Sampler: Euler, CFG scale: 1, Seed: 7, Size: 64x48";

std::optional<std::string> params_of(const std::vector<uint8_t>& bytes) {
    auto r = decode_image_parameters(bytes.data(), bytes.size());
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? *r : std::nullopt;
}

// Inserts a chunk right after IHDR (PNG signature 8 + IHDR 25 bytes).
std::vector<uint8_t> insert_png_chunk(std::vector<uint8_t> png, const char* type,
                                      const std::string& data) {
    std::vector<uint8_t> chunk;
    const uint32_t len = static_cast<uint32_t>(data.size());
    for (int s = 24; s >= 0; s -= 8) chunk.push_back(static_cast<uint8_t>(len >> s));
    chunk.insert(chunk.end(), type, type + 4);
    chunk.insert(chunk.end(), data.begin(), data.end());
    const uint32_t crc = static_cast<uint32_t>(crc32(0, chunk.data() + 4, len + 4));
    for (int s = 24; s >= 0; s -= 8) chunk.push_back(static_cast<uint8_t>(crc >> s));
    png.insert(png.begin() + 33, chunk.begin(), chunk.end());
    return png;
}

std::string zlib_compress(const std::string& text) {
    uLongf size = compressBound(text.size());
    std::string out(size, '\0');
    compress(reinterpret_cast<Bytef*>(&out[0]), &size, reinterpret_cast<const Bytef*>(text.data()),
             text.size());
    out.resize(size);
    return out;
}

TEST(PngParameters, RoundTripThroughFile) {
    const std::string dir = test::fresh_tmp_dir();
    ImageWriteOptions opt;
    opt.parameters = kParams;
    const Image src = noise_image(64, 48, 3);
    ASSERT_TRUE(write_image(dir + "/out.png", src, opt).ok());
    const auto bytes = test::file_bytes(dir + "/out.png");
    EXPECT_TRUE(contains(bytes, std::string("tEXtparameters\0", 15)));
    auto text = read_image_parameters(dir + "/out.png");
    ASSERT_TRUE(text.ok()) << text.status().message();
    EXPECT_EQ(*text, kParams);
    auto img = read_image(dir + "/out.png");  // pixels unaffected by the text chunk
    ASSERT_TRUE(img.ok());
    EXPECT_EQ(img->pixels, src.pixels);
}

TEST(PngParameters, TextChunkPrecedesImageData) {
    ImageWriteOptions opt;
    opt.parameters = kParams;
    auto bytes = encode_image(noise_image(8, 8, 3), ImageFormat::Png, opt);
    ASSERT_TRUE(bytes.ok());
    const std::string s(bytes->begin(), bytes->end());
    EXPECT_LT(s.find("tEXt"), s.find("IDAT"));
}

TEST(PngParameters, NonAsciiGoesToUtf8Itxt) {
    ImageWriteOptions opt;
    opt.parameters = kUnicodeParams;
    auto bytes = encode_image(noise_image(8, 8, 3), ImageFormat::Png, opt);
    ASSERT_TRUE(bytes.ok());
    EXPECT_TRUE(contains(*bytes, std::string("iTXtparameters\0", 15)));
    EXPECT_EQ(params_of(*bytes), kUnicodeParams);
}

TEST(PngParameters, ReadsOtherWritersChunks) {
    auto plain = encode_image(noise_image(8, 8, 3), ImageFormat::Png);
    ASSERT_TRUE(plain.ok());
    EXPECT_EQ(params_of(*plain), std::nullopt);

    // zTXt: keyword, NUL, method 0, zlib data.
    std::string z = std::string("parameters\0\0", 12) + zlib_compress(kParams);
    EXPECT_EQ(params_of(insert_png_chunk(*plain, "zTXt", z)), kParams);

    // Compressed iTXt: keyword NUL, flag 1, method 0, language NUL, translated NUL, data.
    std::string it = std::string("parameters\0\1\0en\0\0", 17) + zlib_compress(kUnicodeParams);
    EXPECT_EQ(params_of(insert_png_chunk(*plain, "iTXt", it)), kUnicodeParams);

    // tEXt in Latin-1 (as the PNG spec says) becomes UTF-8.
    std::string latin = std::string("parameters\0caf\xe9", 15);
    EXPECT_EQ(params_of(insert_png_chunk(*plain, "tEXt", latin)), "caf\xc3\xa9");

    // Other keywords are ignored.
    std::string other = std::string("Comment\0hello", 13);
    EXPECT_EQ(params_of(insert_png_chunk(*plain, "tEXt", other)), std::nullopt);
}

TEST(PngParameters, CorruptTextChunkIsAnError) {
    auto plain = encode_image(noise_image(8, 8, 3), ImageFormat::Png);
    ASSERT_TRUE(plain.ok());
    auto bytes = insert_png_chunk(*plain, "tEXt", std::string("parameters\0hi", 13));
    bytes[33 + 8 + 12] ^= 0x20;  // flip a text byte: CRC no longer matches
    auto r = decode_image_parameters(bytes.data(), bytes.size());
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("CRC"), std::string::npos);

    auto bomb = insert_png_chunk(*plain, "zTXt", std::string("parameters\0\0garbage", 19));
    r = decode_image_parameters(bomb.data(), bomb.size());
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("compressed"), std::string::npos);
}

TEST(PngParameters, MissingParametersIsAClearError) {
    const std::string dir = test::fresh_tmp_dir();
    ASSERT_TRUE(write_image(dir + "/plain.png", noise_image(8, 8, 3)).ok());
    auto r = read_image_parameters(dir + "/plain.png");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("no 'parameters'"), std::string::npos);
    EXPECT_NE(r.status().message().find("plain.png"), std::string::npos);
}

TEST(JpegParameters, RoundTripThroughExifUserComment) {
    const std::string dir = test::fresh_tmp_dir();
    for (const std::string& params : {kParams, kUnicodeParams}) {
        ImageWriteOptions opt;
        opt.parameters = params;
        const Image src = gradient_image(64, 48, 3);
        ASSERT_TRUE(write_image(dir + "/out.jpg", src, opt).ok());
        const auto bytes = test::file_bytes(dir + "/out.jpg");
        EXPECT_TRUE(contains(bytes, std::string("Exif\0\0MM", 8)));
        EXPECT_TRUE(contains(bytes, std::string("UNICODE\0", 8)));
        auto text = read_image_parameters(dir + "/out.jpg");
        ASSERT_TRUE(text.ok()) << text.status().message();
        EXPECT_EQ(*text, params);
        auto img = read_image(dir + "/out.jpg");
        ASSERT_TRUE(img.ok()) << img.status().message();
        EXPECT_LT(test::mean_abs_diff(*img, src), 3.0);
    }
}

TEST(JpegParameters, VeryLongTextFallsBackToComSegments) {
    std::string params = "long prompt";
    while (params.size() < 100000) params += ", more words";
    params += "\nSteps: 20, Sampler: Euler, CFG scale: 7, Seed: 1, Size: 16x16";
    ImageWriteOptions opt;
    opt.parameters = params;
    auto bytes = encode_image(gradient_image(16, 16, 3), ImageFormat::Jpeg, opt);
    ASSERT_TRUE(bytes.ok()) << bytes.status().message();
    EXPECT_EQ(params_of(*bytes), params);
    EXPECT_TRUE(decode_image(*bytes).ok());
}

TEST(JpegParameters, NoneWhenNotWritten) {
    auto bytes = encode_image(gradient_image(16, 16, 3), ImageFormat::Jpeg);
    ASSERT_TRUE(bytes.ok());
    EXPECT_EQ(params_of(*bytes), std::nullopt);
}

TEST(WebpParameters, RoundTripThroughExifChunk) {
    const std::string dir = test::fresh_tmp_dir();
    struct Case {
        int channels;
        bool lossless;
    };
    for (const Case c : {Case{3, true}, Case{4, true}, Case{3, false}, Case{4, false}}) {
        ImageWriteOptions opt;
        opt.parameters = kUnicodeParams;
        opt.lossless = c.lossless;
        const Image src =
            c.lossless ? noise_image(40, 24, c.channels) : gradient_image(40, 24, c.channels);
        ASSERT_TRUE(write_image(dir + "/out.webp", src, opt).ok());
        auto text = read_image_parameters(dir + "/out.webp");
        ASSERT_TRUE(text.ok()) << text.status().message();
        EXPECT_EQ(*text, kUnicodeParams);
        auto img = read_image(dir + "/out.webp");
        ASSERT_TRUE(img.ok()) << img.status().message();
        EXPECT_EQ(img->channels, c.channels);
        if (c.lossless) {
            EXPECT_EQ(img->pixels, src.pixels);
        } else {
            EXPECT_LT(test::mean_abs_diff(*img, src), 3.0);
        }
        const auto bytes = test::file_bytes(dir + "/out.webp");
        EXPECT_TRUE(contains(bytes, "VP8X"));
        // The RIFF size covers the whole file.
        const uint32_t riff = bytes[4] | bytes[5] << 8 | bytes[6] << 16 | uint32_t(bytes[7]) << 24;
        EXPECT_EQ(riff + 8, bytes.size());
    }
}

TEST(Exif, LittleEndianAndAsciiComments) {
    // Hand-built little-endian TIFF: IFD0 -> Exif IFD -> UserComment "ASCII\0\0\0hello".
    std::vector<uint8_t> t = {'I', 'I', 42, 0,  8, 0, 0,  0, 1, 0, 0x69, 0x87, 4, 0,    1,
                              0,   0,   0,  26, 0, 0, 0,  0, 0, 0, 0,    1,    0, 0x86, 0x92,
                              7,   0,   13, 0,  0, 0, 44, 0, 0, 0, 0,    0,    0, 0};
    const char comment[] = "ASCII\0\0\0hello";
    t.insert(t.end(), comment, comment + 13);
    auto r = exif_user_comment(t.data(), t.size());
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(*r, std::optional<std::string>("hello"));

    // UNICODE in little-endian byte order follows the TIFF header.
    t.resize(44);
    t[32] = 8 + 4;  // UserComment byte count
    const uint8_t uni[] = {'U', 'N', 'I', 'C', 'O', 'D', 'E', 0, 'h', 0, 'i', 0};
    t.insert(t.end(), uni, uni + 12);
    r = exif_user_comment(t.data(), t.size());
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(*r, std::optional<std::string>("hi"));

    // Offsets past the end are errors, not crashes.
    t[36] = 200;
    EXPECT_FALSE(exif_user_comment(t.data(), t.size()).ok());

    const auto own = make_exif_user_comment("x\ny");
    r = exif_user_comment(own.data(), own.size());
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(*r, std::optional<std::string>("x\ny"));
}

}  // namespace
}  // namespace ggdiff
