// Encode/decode round trips for PNG, JPEG and WebP, and PNG input normalization.
#include <png.h>

#include <cstring>

#include "image/file_io.h"
#include "image/image_io.h"
#include "test_helpers.h"

namespace ggdiff {
namespace {

using test::gradient_image;
using test::mean_abs_diff;
using test::noise_image;

// Writes a PNG with libpng directly, for input layouts our encoder never produces.
struct RawPng {
    int width = 0, height = 0, bit_depth = 8, color_type = PNG_COLOR_TYPE_RGB;
    bool interlace = false;
    std::vector<std::vector<uint8_t>> rows;  // packed as libpng expects (16-bit big-endian)
    std::vector<png_color> palette;
    std::vector<uint8_t> trns;  // palette alpha
};

void append_bytes(png_structp png, png_bytep data, size_t n) {
    auto* out = static_cast<std::vector<uint8_t>*>(png_get_io_ptr(png));
    out->insert(out->end(), data, data + n);
}

std::vector<uint8_t> write_raw_png(RawPng& raw) {
    std::vector<uint8_t> out;
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
    png_infop info = png_create_info_struct(png);
    png_set_write_fn(png, &out, append_bytes, nullptr);
    png_set_IHDR(png, info, raw.width, raw.height, raw.bit_depth, raw.color_type,
                 raw.interlace ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    if (!raw.palette.empty()) {
        png_set_PLTE(png, info, raw.palette.data(), static_cast<int>(raw.palette.size()));
    }
    if (!raw.trns.empty()) {
        png_set_tRNS(png, info, raw.trns.data(), static_cast<int>(raw.trns.size()), nullptr);
    }
    std::vector<png_bytep> rows;
    for (auto& r : raw.rows) rows.push_back(r.data());
    png_write_info(png, info);
    png_write_image(png, rows.data());
    png_write_end(png, nullptr);
    png_destroy_write_struct(&png, &info);
    return out;
}

TEST(PngCodec, RoundTripIsExactForEveryChannelCount) {
    for (int channels = 1; channels <= 4; ++channels) {
        const Image src = noise_image(37, 23, channels, channels);
        auto bytes = encode_image(src, ImageFormat::Png);
        ASSERT_TRUE(bytes.ok()) << bytes.status().message();
        auto back = decode_image(*bytes);
        ASSERT_TRUE(back.ok()) << back.status().message();
        // Grey comes back as RGB, grey+alpha as RGBA.
        const int want_channels = channels <= 2 ? channels + 2 : channels;
        EXPECT_EQ(back->channels, want_channels);
        EXPECT_EQ(back->width, 37);
        EXPECT_EQ(back->height, 23);
        EXPECT_EQ(back->pixels, convert_channels(src, want_channels).pixels) << channels;
    }
}

TEST(PngCodec, FileRoundTrip) {
    const std::string dir = test::fresh_tmp_dir();
    const Image src = noise_image(64, 48, 4);
    ASSERT_TRUE(write_image(dir + "/a.png", src).ok());
    auto back = read_image(dir + "/a.png");
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(back->pixels, src.pixels);
    EXPECT_EQ(back->channels, 4);
}

TEST(PngCodec, GreyBecomesRgb) {
    RawPng raw;
    raw.width = 5, raw.height = 2, raw.color_type = PNG_COLOR_TYPE_GRAY;
    raw.rows = {{0, 50, 100, 150, 255}, {1, 2, 3, 4, 5}};
    auto img = decode_image(write_raw_png(raw));
    ASSERT_TRUE(img.ok()) << img.status().message();
    ASSERT_EQ(img->channels, 3);
    EXPECT_EQ(img->pixels[3 * 2 + 0], 100);
    EXPECT_EQ(img->pixels[3 * 2 + 1], 100);
    EXPECT_EQ(img->pixels[3 * 2 + 2], 100);
    EXPECT_EQ(img->pixels[3 * 9 + 2], 5);
}

TEST(PngCodec, OneBitGreyExpandsTo0And255) {
    RawPng raw;
    raw.width = 8, raw.height = 1, raw.bit_depth = 1, raw.color_type = PNG_COLOR_TYPE_GRAY;
    raw.rows = {{0xA5}};  // 1010 0101
    auto img = decode_image(write_raw_png(raw));
    ASSERT_TRUE(img.ok()) << img.status().message();
    ASSERT_EQ(img->channels, 3);
    const int want[8] = {255, 0, 255, 0, 0, 255, 0, 255};
    for (int x = 0; x < 8; ++x) EXPECT_EQ(img->pixels[3 * x], want[x]) << x;
}

TEST(PngCodec, GreyAlphaBecomesRgba) {
    RawPng raw;
    raw.width = 2, raw.height = 1, raw.color_type = PNG_COLOR_TYPE_GRAY_ALPHA;
    raw.rows = {{10, 20, 30, 40}};
    auto img = decode_image(write_raw_png(raw));
    ASSERT_TRUE(img.ok()) << img.status().message();
    ASSERT_EQ(img->channels, 4);
    EXPECT_EQ(img->pixels, (std::vector<uint8_t>{10, 10, 10, 20, 30, 30, 30, 40}));
}

TEST(PngCodec, PaletteWithTransparencyBecomesRgba) {
    RawPng raw;
    raw.width = 3, raw.height = 1, raw.bit_depth = 8, raw.color_type = PNG_COLOR_TYPE_PALETTE;
    raw.palette = {{255, 0, 0}, {0, 255, 0}, {0, 0, 255}};
    raw.trns = {0, 128};  // index 0 transparent, 1 half, 2 opaque
    raw.rows = {{2, 1, 0}};
    auto img = decode_image(write_raw_png(raw));
    ASSERT_TRUE(img.ok()) << img.status().message();
    ASSERT_EQ(img->channels, 4);
    EXPECT_EQ(img->pixels, (std::vector<uint8_t>{0, 0, 255, 255, 0, 255, 0, 128, 255, 0, 0, 0}));
}

TEST(PngCodec, PaletteWithoutTransparencyBecomesRgb) {
    RawPng raw;
    raw.width = 4, raw.height = 1, raw.bit_depth = 2, raw.color_type = PNG_COLOR_TYPE_PALETTE;
    raw.palette = {{1, 2, 3}, {4, 5, 6}, {7, 8, 9}, {10, 11, 12}};
    raw.rows = {{0x1B}};  // indices 0 1 2 3
    auto img = decode_image(write_raw_png(raw));
    ASSERT_TRUE(img.ok()) << img.status().message();
    ASSERT_EQ(img->channels, 3);
    EXPECT_EQ(img->pixels, (std::vector<uint8_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
}

TEST(PngCodec, SixteenBitScalesTo8Bit) {
    RawPng raw;
    raw.width = 3, raw.height = 1, raw.bit_depth = 16, raw.color_type = PNG_COLOR_TYPE_RGB_ALPHA;
    const uint8_t values[12] = {0, 1, 2, 3, 100, 128, 200, 254, 255, 7, 9, 11};
    std::vector<uint8_t> row;
    for (uint8_t v : values) {
        const uint16_t v16 = static_cast<uint16_t>(v * 257);
        row.push_back(static_cast<uint8_t>(v16 >> 8));
        row.push_back(static_cast<uint8_t>(v16 & 0xFF));
    }
    raw.rows = {row};
    auto img = decode_image(write_raw_png(raw));
    ASSERT_TRUE(img.ok()) << img.status().message();
    ASSERT_EQ(img->channels, 4);
    EXPECT_EQ(img->pixels, std::vector<uint8_t>(values, values + 12));
}

TEST(PngCodec, InterlacedDecodesExactly) {
    const Image src = noise_image(19, 13, 3, 7);
    RawPng raw;
    raw.width = 19, raw.height = 13, raw.interlace = true;
    for (int y = 0; y < 13; ++y) {
        raw.rows.emplace_back(src.pixels.begin() + y * src.row_bytes(),
                              src.pixels.begin() + (y + 1) * src.row_bytes());
    }
    auto img = decode_image(write_raw_png(raw));
    ASSERT_TRUE(img.ok()) << img.status().message();
    EXPECT_EQ(img->pixels, src.pixels);
}

TEST(JpegCodec, RoundTripIsClose) {
    const Image src = gradient_image(96, 64, 3);
    for (int quality : {75, 95}) {
        ImageWriteOptions opt;
        opt.quality = quality;
        auto bytes = encode_image(src, ImageFormat::Jpeg, opt);
        ASSERT_TRUE(bytes.ok()) << bytes.status().message();
        auto back = decode_image(*bytes);
        ASSERT_TRUE(back.ok()) << back.status().message();
        ASSERT_EQ(back->channels, 3);
        ASSERT_EQ(back->width, 96);
        ASSERT_EQ(back->height, 64);
        EXPECT_LT(mean_abs_diff(*back, src), quality == 95 ? 2.0 : 4.0) << quality;
    }
}

TEST(JpegCodec, HigherQualityIsLargerAndCloser) {
    const Image src = noise_image(64, 64, 3);
    ImageWriteOptions lo, hi;
    lo.quality = 30;
    hi.quality = 98;
    auto a = encode_image(src, ImageFormat::Jpeg, lo);
    auto b = encode_image(src, ImageFormat::Jpeg, hi);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_LT(a->size(), b->size());
    EXPECT_GT(mean_abs_diff(*decode_image(*a), src), mean_abs_diff(*decode_image(*b), src));
}

TEST(JpegCodec, GreyAndAlphaInputs) {
    const Image grey = gradient_image(32, 32, 1);
    auto g = decode_image(*encode_image(grey, ImageFormat::Jpeg));
    ASSERT_TRUE(g.ok()) << g.status().message();
    EXPECT_EQ(g->channels, 3);
    EXPECT_LT(mean_abs_diff(*g, convert_channels(grey, 3)), 2.0);

    const Image rgba = gradient_image(32, 32, 4);  // alpha is dropped
    auto c = decode_image(*encode_image(rgba, ImageFormat::Jpeg));
    ASSERT_TRUE(c.ok()) << c.status().message();
    EXPECT_EQ(c->channels, 3);
    EXPECT_LT(mean_abs_diff(*c, convert_channels(rgba, 3)), 3.0);
}

TEST(WebpCodec, LosslessRoundTripIsExact) {
    ImageWriteOptions opt;
    opt.lossless = true;
    const Image rgb = noise_image(41, 17, 3);
    auto back = decode_image(*encode_image(rgb, ImageFormat::WebP, opt));
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(back->channels, 3);
    EXPECT_EQ(back->pixels, rgb.pixels);

    // Random alpha includes 0: RGB under transparent pixels must survive too.
    const Image rgba = noise_image(41, 17, 4, 3);
    back = decode_image(*encode_image(rgba, ImageFormat::WebP, opt));
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(back->channels, 4);
    EXPECT_EQ(back->pixels, rgba.pixels);
}

TEST(WebpCodec, LossyRoundTripIsClose) {
    const Image src = gradient_image(96, 64, 3);
    ImageWriteOptions opt;
    opt.quality = 95;
    auto bytes = encode_image(src, ImageFormat::WebP, opt);
    ASSERT_TRUE(bytes.ok()) << bytes.status().message();
    auto back = decode_image(*bytes);
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(back->channels, 3);
    EXPECT_LT(mean_abs_diff(*back, src), 3.0);
}

TEST(WebpCodec, LossyWithAlphaKeepsAlpha) {
    const Image src = gradient_image(48, 32, 4);
    auto back = decode_image(*encode_image(src, ImageFormat::WebP));
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(back->channels, 4);
    EXPECT_LT(mean_abs_diff(*back, src), 3.0);
}

TEST(WebpCodec, GreyIsExpandedToRgb) {
    ImageWriteOptions opt;
    opt.lossless = true;
    const Image grey = noise_image(16, 16, 1);
    auto back = decode_image(*encode_image(grey, ImageFormat::WebP, opt));
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(back->pixels, convert_channels(grey, 3).pixels);
}

TEST(ImageIo, FormatIsDetectedByContentNotExtension) {
    const std::string dir = test::fresh_tmp_dir();
    const Image src = noise_image(8, 8, 3);
    auto png = encode_image(src, ImageFormat::Png);
    ASSERT_TRUE(png.ok());
    test::put_file(dir + "/really_a_png.jpg", *png);
    auto back = read_image(dir + "/really_a_png.jpg");
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(back->pixels, src.pixels);
}

TEST(ImageIo, WriteChoosesFormatFromExtension) {
    const std::string dir = test::fresh_tmp_dir();
    const Image src = gradient_image(16, 16, 3);
    for (const char* name : {"a.png", "b.JPG", "c.jpeg", "d.webp", "e.PNG"}) {
        ASSERT_TRUE(write_image(dir + "/" + name, src).ok()) << name;
    }
    auto fmt = [&](const char* name) {
        const auto bytes = test::file_bytes(dir + "/" + name);
        return detect_image_format(bytes.data(), bytes.size());
    };
    EXPECT_EQ(fmt("a.png"), ImageFormat::Png);
    EXPECT_EQ(fmt("b.JPG"), ImageFormat::Jpeg);
    EXPECT_EQ(fmt("c.jpeg"), ImageFormat::Jpeg);
    EXPECT_EQ(fmt("d.webp"), ImageFormat::WebP);
    EXPECT_EQ(fmt("e.PNG"), ImageFormat::Png);
}

TEST(ImageIo, EncodeRejectsInvalidImages) {
    Image bad = noise_image(4, 4, 3);
    bad.pixels.pop_back();
    auto r = encode_image(bad, ImageFormat::Png);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("pixel buffer"), std::string::npos);
    Image five = noise_image(4, 4, 3);
    five.channels = 5;
    EXPECT_FALSE(encode_image(five, ImageFormat::Jpeg).ok());
    EXPECT_FALSE(encode_image(Image{}, ImageFormat::WebP).ok());
}

TEST(ImageFormatNames, ParseAndNames) {
    EXPECT_EQ(*parse_image_format("PNG"), ImageFormat::Png);
    EXPECT_EQ(*parse_image_format("jpg"), ImageFormat::Jpeg);
    EXPECT_EQ(*parse_image_format("webp"), ImageFormat::WebP);
    auto bad = parse_image_format("gif");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find("'gif'"), std::string::npos);
    EXPECT_STREQ(image_format_mime_type(ImageFormat::Jpeg), "image/jpeg");
    EXPECT_STREQ(image_format_extension(ImageFormat::WebP), ".webp");
    EXPECT_EQ(*image_format_from_path("/x/y.Z/out.WebP"), ImageFormat::WebP);
}

TEST(ConvertChannels, AllDirections) {
    Image rgb;
    rgb.width = 1, rgb.height = 1, rgb.channels = 3, rgb.pixels = {255, 0, 0};
    EXPECT_EQ(convert_channels(rgb, 4).pixels, (std::vector<uint8_t>{255, 0, 0, 255}));
    EXPECT_EQ(convert_channels(rgb, 1).pixels, (std::vector<uint8_t>{76}));
    Image ga;
    ga.width = 1, ga.height = 1, ga.channels = 2, ga.pixels = {9, 99};
    EXPECT_EQ(convert_channels(ga, 4).pixels, (std::vector<uint8_t>{9, 9, 9, 99}));
    EXPECT_EQ(convert_channels(ga, 3).pixels, (std::vector<uint8_t>{9, 9, 9}));
}

}  // namespace
}  // namespace ggdiff
