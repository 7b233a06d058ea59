// LTX-2.3's hires fix through the CLI (-M vid_gen --hires) on the tiny LTX parts of
// tests/cli/ltx_e2e_test.cpp and tiny latent upscalers made at test time
// (tests/fixtures/ltx_upscaler_{x2,x1_5,t2}.tensors), given by name in a
// --hires-upscalers-dir: the x2 spatial upscaler doubles the frames' size (64 -> 128), the
// x1.5 one makes 96x96, the temporal one 17 frames from 9 with the sound track lengthened to
// match (a hires target that differs from the model's output is ignored with a warning, as the
// reference does); a batch of two gives each video the same frames as a batch of one. Clear
// errors, before anything is computed, for a built-in upscaler (the fix runs a model), a name
// not in the folder, and a file that is not an LTX-2 latent upscaler.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>

#include "../golden/e2e_support.h"
#include "../support/ltx_parts.h"
#include "image/image_io.h"
#include "image/video_io.h"
#include "image/wav.h"

namespace {

namespace fs = std::filesystem;
namespace e2e = ggdiff::e2e;
using e2e::contains;
using e2e::RunResult;

using ggdiff::ltx_parts::expected_samples;
using ggdiff::ltx_parts::part;

std::vector<std::string> parts() {
    std::vector<std::string> a = {"-M", "vid_gen", "-t", "2"};
    const std::vector<std::string> files = ggdiff::ltx_parts::part_args();
    a.insert(a.end(), files.begin(), files.end());
    return a;
}

std::vector<uint8_t> read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

class LtxHiresCli : public ::testing::Test {
  protected:
    void SetUp() override {
        for (const char* name : {"dit", "connectors", "llm", "vae", "audio_vae"}) {
            ASSERT_TRUE(fs::is_regular_file(part(name)))
                << "missing " << part(name) << " (run through ctest: its fixture tests make it)";
        }
        dir_ = e2e::fresh_dir();
        ups_ = dir_ + "/upscalers";
        fs::create_directories(ups_);
        for (const char* kind : {"x2", "x1_5", "t2"}) {
            const std::string src = e2e::built_fixture(std::string("ltx_upscaler_") + kind);
            ASSERT_TRUE(fs::is_regular_file(src)) << "missing " << src;
            fs::copy_file(src, ups_ + "/ltx_up_" + kind + ".safetensors");
        }
        // An LTX-2 file that is no upscaler (the video VAE).
        fs::copy_file(part("vae"), ups_ + "/not_an_upscaler.safetensors");
    }

    // A 64x64 request of 9 frames at 16 fps, 2 steps, then --hires with `upscaler` (2 steps at
    // strength 0.5).
    RunResult run(const std::string& upscaler, const std::string& out,
                  std::vector<std::string> extra = {}) const {
        std::vector<std::string> args = parts();
        args.insert(args.end(), {"-p",
                                 "a red cat",
                                 "-W",
                                 "64",
                                 "-H",
                                 "64",
                                 "--steps",
                                 "2",
                                 "-s",
                                 "42",
                                 "--video-frames",
                                 "9",
                                 "--fps",
                                 "16",
                                 "--hires",
                                 "--hires-upscalers-dir",
                                 ups_,
                                 "--hires-steps",
                                 "2",
                                 "--hires-denoising-strength",
                                 "0.5",
                                 "-o",
                                 dir_ + "/" + out});
        if (!upscaler.empty()) args.insert(args.end(), {"--hires-upscaler", upscaler});
        args.insert(args.end(), extra.begin(), extra.end());
        return e2e::run_ggdiff(args, dir_, 900);
    }

    void expect_refused(const std::string& upscaler, const std::string& message) const {
        RunResult r = run(upscaler, "x.avi");
        EXPECT_TRUE(r.failed_cleanly()) << r.describe();
        EXPECT_TRUE(contains(r.err, message)) << message << "\n" << r.describe();
        EXPECT_FALSE(contains(r.err, "sampling")) << "computed before refusing\n" << r.describe();
        EXPECT_FALSE(fs::exists(dir_ + "/x.avi"));
    }

    std::string dir_, ups_;
};

// x2 in space: nine 128x128 frames, the sound of nine frames.
TEST_F(LtxHiresCli, SpatialX2DoublesTheSize) {
    RunResult r = run("ltx_up_x2", "a_%02d.png", {"-v"});
    ASSERT_TRUE(r.succeeded()) << r.describe();
    EXPECT_TRUE(contains(r.err, "latent upscale to 128x128")) << r.describe();
    EXPECT_FALSE(contains(r.err, "ignoring the hires target")) << r.describe();
    for (int i = 0; i < 9; ++i) {
        char name[32];
        std::snprintf(name, sizeof name, "/a_%02d.png", i);
        auto img = ggdiff::read_image(dir_ + name);
        ASSERT_TRUE(img.ok()) << name << " " << r.describe();
        EXPECT_EQ(img->width, 128);
        EXPECT_EQ(img->height, 128);
    }
    EXPECT_FALSE(fs::exists(dir_ + "/a_09.png"));
    const std::vector<uint8_t> wav = read_bytes(dir_ + "/a_00.wav");
    auto track = ggdiff::decode_wav(wav.data(), wav.size());
    ASSERT_TRUE(track.ok()) << track.status().message() << "\n" << r.describe();
    EXPECT_EQ(static_cast<int64_t>(track->sample_count()), expected_samples(9, 16));
}

// x1.5 (rational): 96x96; the default --hires-scale's 128x128 is ignored with a warning.
TEST_F(LtxHiresCli, RationalX1_5) {
    RunResult r = run("ltx_up_x1_5", "r.avi");
    ASSERT_TRUE(r.succeeded()) << r.describe();
    EXPECT_TRUE(contains(r.err, "gives 96x96; ignoring the hires target 128x128")) << r.describe();
    const std::vector<uint8_t> avi = read_bytes(dir_ + "/r.avi");
    auto video = ggdiff::decode_video(avi.data(), avi.size());
    ASSERT_TRUE(video.ok()) << video.status().message();
    EXPECT_EQ(video->frames.size(), 9u);
    EXPECT_EQ(video->width, 96);
    EXPECT_EQ(video->height, 96);
    EXPECT_EQ(static_cast<int64_t>(video->audio.sample_count()), expected_samples(9, 16));
}

// x2 in time: 17 frames of 64x64 and the sound of 17 frames; a batch of two makes two such
// videos, the first the same as alone (the second pass leaves the first's layout behind).
TEST_F(LtxHiresCli, TemporalX2DoublesTheFrames) {
    RunResult r = run("ltx_up_t2", "t.avi", {"--hires-width", "64"});
    ASSERT_TRUE(r.succeeded()) << r.describe();
    EXPECT_FALSE(contains(r.err, "ignoring the hires target")) << r.describe();
    const std::vector<uint8_t> avi = read_bytes(dir_ + "/t.avi");
    auto video = ggdiff::decode_video(avi.data(), avi.size());
    ASSERT_TRUE(video.ok()) << video.status().message();
    EXPECT_EQ(video->frames.size(), 17u);
    EXPECT_EQ(video->width, 64);
    EXPECT_EQ(video->height, 64);
    EXPECT_EQ(video->fps, 16);
    EXPECT_EQ(static_cast<int64_t>(video->audio.sample_count()), expected_samples(17, 16));

    RunResult b = run("ltx_up_t2", "b_%02d.png", {"-b", "2"});
    ASSERT_TRUE(b.succeeded()) << b.describe();
    EXPECT_TRUE(contains(b.err, "ignoring the hires target 128x128")) << b.describe();
    RunResult one = run("ltx_up_t2", "o_%02d.png");
    ASSERT_TRUE(one.succeeded()) << one.describe();
    for (int i = 0; i < 34; ++i) {
        char name[32];
        std::snprintf(name, sizeof name, "/b_%02d.png", i);
        auto img = ggdiff::read_image(dir_ + name);
        ASSERT_TRUE(img.ok()) << name << " " << b.describe();
        EXPECT_EQ(img->width, 64);
    }
    EXPECT_FALSE(fs::exists(dir_ + "/b_34.png"));
    for (const char* f : {"_00.png", "_08.png", "_16.png"}) {
        EXPECT_EQ(read_bytes(dir_ + "/o" + f), read_bytes(dir_ + "/b" + f)) << f;
    }
    auto d = e2e::compare_images(dir_ + "/b_00.png", dir_ + "/b_17.png");
    ASSERT_TRUE(d.ok) << d.error;
    EXPECT_GT(d.mean_abs, 1.0) << "the second item repeats the first";
}

TEST_F(LtxHiresCli, Refusals) {
    // The default upscaler (Latent) and the image ones: LTX-2's fix runs a model.
    expect_refused("", "runs a latent upscaler model");
    expect_refused("Lanczos", "runs a latent upscaler model");
    expect_refused("ltx_up_x3", "no ltx_up_x3.gguf, .safetensors, .pt or .pth");
    expect_refused("not_an_upscaler", "is not an LTX-2 latent upscaler");
}

}  // namespace
