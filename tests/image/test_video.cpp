// Video files: MJPEG AVI structure and round trips, animated WebP round trips, errors.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "image/image_metadata.h"
#include "image/video_io.h"
#include "test_helpers.h"

namespace ggdiff {
namespace {

// A frame of one colour (survives JPEG nearly exactly), so frame order shows after decoding.
Image solid(int w, int h, uint8_t r, uint8_t g, uint8_t b) {
    Image img;
    img.width = w;
    img.height = h;
    img.channels = 3;
    img.pixels.resize(img.byte_size());
    for (size_t i = 0; i < img.pixels.size(); i += 3) {
        img.pixels[i] = r;
        img.pixels[i + 1] = g;
        img.pixels[i + 2] = b;
    }
    return img;
}

std::vector<Image> three_frames(int w = 48, int h = 32) {
    return {solid(w, h, 220, 30, 30), solid(w, h, 30, 220, 30), solid(w, h, 30, 30, 220)};
}

// The mean of channel c over a frame.
double channel_mean(const Image& img, int c) {
    double sum = 0;
    for (size_t i = static_cast<size_t>(c); i < img.pixels.size(); i += img.channels)
        sum += img.pixels[i];
    return sum / (static_cast<double>(img.pixels.size()) / img.channels);
}

// Which of the three frames (0 red, 1 green, 2 blue) an image looks like.
int dominant(const Image& img) {
    int best = 0;
    for (int c = 1; c < 3; ++c)
        if (channel_mean(img, c) > channel_mean(img, best)) best = c;
    return best;
}

uint32_t le32(const std::vector<uint8_t>& b, size_t at) {
    return uint32_t(b[at]) | uint32_t(b[at + 1]) << 8 | uint32_t(b[at + 2]) << 16 |
           uint32_t(b[at + 3]) << 24;
}

size_t find(const std::vector<uint8_t>& b, const char* id, size_t from = 0) {
    for (size_t i = from; i + 4 <= b.size(); ++i)
        if (std::memcmp(&b[i], id, 4) == 0) return i;
    return std::string::npos;
}

TEST(AviWriter, StructureIsRiffAviWithMjpegStreamAndIndex) {
    VideoWriteOptions o;
    o.fps = 12;
    o.parameters = "a red fox\nSteps: 4, Seed: 42";
    auto avi = encode_video(three_frames(), VideoFormat::Avi, o);
    ASSERT_TRUE(avi.ok()) << avi.status().message();
    const std::vector<uint8_t>& b = *avi;
    ASSERT_GT(b.size(), 200u);
    EXPECT_EQ(std::memcmp(b.data(), "RIFF", 4), 0);
    EXPECT_EQ(le32(b, 4), b.size() - 8);
    EXPECT_EQ(std::memcmp(&b[8], "AVI ", 4), 0);
    EXPECT_EQ(std::memcmp(&b[12], "LIST", 4), 0);
    EXPECT_EQ(std::memcmp(&b[20], "hdrl", 4), 0);
    const size_t avih = find(b, "avih");
    ASSERT_NE(avih, std::string::npos);
    EXPECT_EQ(le32(b, avih + 4), 56u);
    EXPECT_EQ(le32(b, avih + 8), 83333u);   // microseconds per frame at 12 fps
    EXPECT_EQ(le32(b, avih + 8 + 16), 3u);  // total frames
    EXPECT_EQ(le32(b, avih + 8 + 24), 1u);  // streams
    EXPECT_EQ(le32(b, avih + 8 + 32), 48u);
    EXPECT_EQ(le32(b, avih + 8 + 36), 32u);
    const size_t strh = find(b, "strh");
    ASSERT_NE(strh, std::string::npos);
    EXPECT_EQ(std::memcmp(&b[strh + 8], "vids", 4), 0);
    EXPECT_EQ(std::memcmp(&b[strh + 12], "MJPG", 4), 0);
    EXPECT_EQ(le32(b, strh + 8 + 20), 1u);   // scale
    EXPECT_EQ(le32(b, strh + 8 + 24), 12u);  // rate
    EXPECT_EQ(le32(b, strh + 8 + 32), 3u);   // length
    const size_t strf = find(b, "strf");
    ASSERT_NE(strf, std::string::npos);
    EXPECT_EQ(le32(b, strf + 4), 40u);
    EXPECT_EQ(std::memcmp(&b[strf + 8 + 16], "MJPG", 4), 0);
    // The parameters in LIST INFO / ICMT, zero-terminated.
    const size_t icmt = find(b, "ICMT");
    ASSERT_NE(icmt, std::string::npos);
    const size_t info = find(b, "INFO");
    ASSERT_NE(info, std::string::npos);
    EXPECT_EQ(std::memcmp(&b[info - 8], "LIST", 4), 0);
    EXPECT_LT(info, icmt);
    EXPECT_LT(icmt, find(b, "movi"));
    EXPECT_EQ(le32(b, icmt + 4), o.parameters.size() + 1);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(&b[icmt + 8])), o.parameters);
    // Three JPEG chunks in movi, each indexed in idx1 relative to 'movi'.
    const size_t movi = find(b, "movi");
    ASSERT_NE(movi, std::string::npos);
    const size_t idx1 = find(b, "idx1", movi);
    ASSERT_NE(idx1, std::string::npos);
    EXPECT_EQ(le32(b, idx1 + 4), 3u * 16u);
    for (int i = 0; i < 3; ++i) {
        const size_t e = idx1 + 8 + 16 * i;
        EXPECT_EQ(std::memcmp(&b[e], "00dc", 4), 0);
        EXPECT_EQ(le32(b, e + 4), 0x10u);  // key frame
        const size_t chunk = movi + le32(b, e + 8);
        ASSERT_LT(chunk + 10, b.size());
        EXPECT_EQ(std::memcmp(&b[chunk], "00dc", 4), 0) << "frame " << i;
        EXPECT_EQ(le32(b, chunk + 4), le32(b, e + 12));
        EXPECT_EQ(b[chunk + 8], 0xff);  // JPEG SOI
        EXPECT_EQ(b[chunk + 9], 0xd8);
    }
    EXPECT_EQ(idx1 + 8 + 48, b.size());
}

TEST(AviWriter, RoundTripKeepsFramesOrderFpsAndParameters) {
    VideoWriteOptions o;
    o.fps = 24;
    o.parameters = "prompt \xc3\xa9t\xc3\xa9\nSteps: 2";
    const std::vector<Image> frames = three_frames();
    auto avi = encode_video(frames, VideoFormat::Avi, o);
    ASSERT_TRUE(avi.ok()) << avi.status().message();
    auto v = decode_video(avi->data(), avi->size());
    ASSERT_TRUE(v.ok()) << v.status().message();
    EXPECT_EQ(v->format, VideoFormat::Avi);
    EXPECT_EQ(v->fps, 24);
    EXPECT_EQ(v->width, 48);
    EXPECT_EQ(v->height, 32);
    EXPECT_EQ(v->parameters, o.parameters);
    ASSERT_EQ(v->frames.size(), 3u);
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(dominant(v->frames[i]), i) << "frame " << i;
        EXPECT_LT(test::mean_abs_diff(v->frames[i], frames[i]), 3.0) << "frame " << i;
    }
}

TEST(AviWriter, ParametersReadAsAnImagesAre) {
    VideoWriteOptions o;
    o.parameters = "an avi\nSteps: 1";
    auto avi = encode_video(three_frames(), VideoFormat::Avi, o);
    ASSERT_TRUE(avi.ok());
    auto text = decode_image_parameters(avi->data(), avi->size());
    ASSERT_TRUE(text.ok()) << text.status().message();
    ASSERT_TRUE(text->has_value());
    EXPECT_EQ(**text, o.parameters);
    auto none = encode_video(three_frames(), VideoFormat::Avi, {});
    ASSERT_TRUE(none.ok());
    text = decode_image_parameters(none->data(), none->size());
    ASSERT_TRUE(text.ok()) << text.status().message();
    EXPECT_FALSE(text->has_value());
    std::vector<uint8_t> cut(avi->begin(), avi->begin() + 40);
    cut[4] = 0xff;  // the RIFF size says more than there is; the hdrl list runs past the end
    EXPECT_FALSE(decode_image_parameters(cut.data(), cut.size()).ok());
}

TEST(AviWriter, WithoutParametersHasNoComment) {
    auto avi = encode_video(three_frames(), VideoFormat::Avi, {});
    ASSERT_TRUE(avi.ok());
    EXPECT_EQ(find(*avi, "ICMT"), std::string::npos);
    auto v = decode_video(avi->data(), avi->size());
    ASSERT_TRUE(v.ok());
    EXPECT_EQ(v->parameters, "");
    EXPECT_EQ(v->fps, 16);
}

TEST(AviWriter, RgbaAndGreyFramesBecomeRgb) {
    std::vector<Image> frames = {test::gradient_image(16, 16, 4), test::gradient_image(16, 16, 1)};
    auto avi = encode_video(frames, VideoFormat::Avi, {});
    ASSERT_TRUE(avi.ok()) << avi.status().message();
    auto v = decode_video(avi->data(), avi->size());
    ASSERT_TRUE(v.ok()) << v.status().message();
    ASSERT_EQ(v->frames.size(), 2u);
    EXPECT_EQ(v->frames[0].channels, 3);
}

TEST(AnimatedWebP, RoundTripKeepsFramesDurationsAndParameters) {
    VideoWriteOptions o;
    o.fps = 8;
    o.quality = 90;
    o.parameters = "a webp video\nSteps: 3";
    auto webp = encode_video(three_frames(), VideoFormat::WebP, o);
    ASSERT_TRUE(webp.ok()) << webp.status().message();
    EXPECT_TRUE(test::contains(*webp, "ANIM"));
    EXPECT_TRUE(test::contains(*webp, "ANMF"));
    EXPECT_TRUE(test::contains(*webp, "EXIF"));
    auto v = decode_video(webp->data(), webp->size());
    ASSERT_TRUE(v.ok()) << v.status().message();
    EXPECT_EQ(v->format, VideoFormat::WebP);
    ASSERT_EQ(v->frames.size(), 3u);
    EXPECT_EQ(v->fps, 8);
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(v->durations_ms[i], 125) << "frame " << i;
        EXPECT_EQ(dominant(v->frames[i]), i) << "frame " << i;
    }
    EXPECT_EQ(v->parameters, o.parameters);
    // The same EXIF reader as still images finds it (-M metadata works on it).
    auto params = decode_image_parameters(webp->data(), webp->size());
    ASSERT_TRUE(params.ok()) << params.status().message();
    ASSERT_TRUE(params->has_value());
    EXPECT_EQ(**params, o.parameters);
}

TEST(AnimatedWebP, Quality100IsLossless) {
    std::vector<Image> frames = {test::noise_image(24, 16, 3, 1), test::noise_image(24, 16, 3, 2)};
    VideoWriteOptions o;
    o.quality = 100;
    auto webp = encode_video(frames, VideoFormat::WebP, o);
    ASSERT_TRUE(webp.ok()) << webp.status().message();
    auto v = decode_video(webp->data(), webp->size());
    ASSERT_TRUE(v.ok()) << v.status().message();
    ASSERT_EQ(v->frames.size(), 2u);
    EXPECT_EQ(v->frames[0].pixels, frames[0].pixels);
    EXPECT_EQ(v->frames[1].pixels, frames[1].pixels);
    EXPECT_EQ(v->parameters, "");
}

TEST(VideoWriter, FileRoundTripByExtension) {
    const std::string dir = test::fresh_tmp_dir();
    VideoWriteOptions o;
    o.fps = 5;
    for (const char* name : {"clip.avi", "clip.WEBP"}) {
        const std::string path = dir + "/" + name;
        ASSERT_TRUE(check_video_output_path(path).ok()) << path;
        Status st = write_video(path, three_frames(), o);
        ASSERT_TRUE(st.ok()) << st.message();
        const std::vector<uint8_t> bytes = test::file_bytes(path);
        auto v = decode_video(bytes.data(), bytes.size());
        ASSERT_TRUE(v.ok()) << v.status().message();
        EXPECT_EQ(v->frames.size(), 3u);
        EXPECT_EQ(v->fps, 5);
    }
    EXPECT_EQ(test::dir_entries(dir), (std::vector<std::string>{"clip.WEBP", "clip.avi"}));
}

TEST(VideoWriter, ErrorsSayWhatIsWrong) {
    auto expect_error = [](const Result<std::vector<uint8_t>>& r, const std::string& part) {
        ASSERT_FALSE(r.ok());
        EXPECT_NE(r.status().message().find(part), std::string::npos) << r.status().message();
    };
    expect_error(encode_video({}, VideoFormat::Avi, {}), "at least one frame");
    std::vector<Image> mixed = {solid(16, 16, 0, 0, 0), solid(16, 8, 0, 0, 0)};
    expect_error(encode_video(mixed, VideoFormat::WebP, {}), "frame 1 is 16x8");
    VideoWriteOptions o;
    o.fps = 0;
    expect_error(encode_video(three_frames(), VideoFormat::Avi, o), "fps 0 is not in 1..240");
    o.fps = 241;
    expect_error(encode_video(three_frames(), VideoFormat::WebP, o), "fps 241");
    o.fps = 16;
    o.quality = 0;
    expect_error(encode_video(three_frames(), VideoFormat::Avi, o), "quality 0");
    Image broken = solid(8, 8, 0, 0, 0);
    broken.pixels.resize(10);
    expect_error(encode_video({broken}, VideoFormat::Avi, {}), "frame 0");

    const std::string dir = test::fresh_tmp_dir();
    Status st = check_video_output_path(dir + "/x.webm");
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.message().find("no WebM encoder"), std::string::npos) << st.message();
    st = check_video_output_path(dir + "/x.mp4");
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.message().find(".mp4"), std::string::npos) << st.message();
    EXPECT_FALSE(check_video_output_path(dir + "/missing/x.avi").ok());
    EXPECT_FALSE(write_video(dir + "/x.avi", {}, {}).ok());
    EXPECT_TRUE(test::dir_entries(dir).empty());

    EXPECT_FALSE(parse_video_format("webm").ok());
    EXPECT_FALSE(parse_video_format("mp4").ok());
    EXPECT_EQ(*parse_video_format("AVI"), VideoFormat::Avi);
    EXPECT_EQ(*parse_video_format("webp"), VideoFormat::WebP);
}

// ffmpeg (when installed) reads the AVI as an MJPEG stream: every frame decodes, at the rate
// written, with the parameters as its comment.
TEST(AviWriter, FfprobeReadsIt) {
    if (!std::filesystem::exists("/usr/bin/ffprobe")) GTEST_SKIP() << "no /usr/bin/ffprobe";
    const std::string dir = test::fresh_tmp_dir();
    VideoWriteOptions o;
    o.fps = 12;
    o.parameters = "ffprobe check";
    ASSERT_TRUE(write_video(dir + "/clip.avi", three_frames(), o).ok());
    const std::string cmd = "/usr/bin/ffprobe -v error -count_frames -show_streams -show_format '" +
                            dir + "/clip.avi' 2>&1";
    std::string out;
    if (FILE* p = popen(cmd.c_str(), "r")) {
        char buf[4096];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
        pclose(p);
    }
    EXPECT_NE(out.find("codec_name=mjpeg"), std::string::npos) << out;
    EXPECT_NE(out.find("nb_read_frames=3"), std::string::npos) << out;
    EXPECT_NE(out.find("r_frame_rate=12/1"), std::string::npos) << out;
    EXPECT_NE(out.find("width=48"), std::string::npos) << out;
    EXPECT_NE(out.find("TAG:comment=ffprobe check"), std::string::npos) << out;
}

TEST(VideoReader, RefusesDamage) {
    auto avi = encode_video(three_frames(), VideoFormat::Avi, {});
    ASSERT_TRUE(avi.ok());
    std::vector<uint8_t> cut(avi->begin(), avi->begin() + static_cast<long>(avi->size() / 2));
    // A cut file: the header counts 3 frames, or a chunk runs past the end.
    EXPECT_FALSE(decode_video(cut.data(), cut.size()).ok());
    std::vector<uint8_t> junk = {'R', 'I', 'F', 'F', 4, 0, 0, 0, 'W', 'A', 'V', 'E'};
    EXPECT_FALSE(decode_video(junk.data(), junk.size()).ok());
    EXPECT_FALSE(decode_video(nullptr, 0).ok());
}

}  // namespace
}  // namespace ggdiff
