// LTX-2.3 through the CLI (-M vid_gen) on tiny random parts made at test time
// (tests/fixtures/ltx_recipe_*.tensors: DiT, embeddings connectors, Gemma 3, video VAE, audio
// VAE; the Gemma tokenizer of tests/golden/pid_tiny): -M info names the family; a 9-frame
// request writes 9 PNG frames of the requested size and a WAV of the audio's sample count
// (160 (4 ceil(frames / fps * 25) - 3) stereo samples at 16 kHz), the same bytes for the same
// seed, other frames for another seed or prompt; an AVI carries the frames and a PCM track of
// that length, a WebP gets the sound as a .wav beside it; without --audio-vae a warning and no
// sound; --temporal-tiling decodes in windows of latent frames; clear errors for a missing
// --embeddings-connectors, --llm, tokenizer or VAE, and for --audio-vae given to another family.
#include <gtest/gtest.h>

#include <algorithm>
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

// Every part, or all but `drop` (a flag).
std::vector<std::string> parts(const std::string& drop = "") {
    std::vector<std::string> a = {"-M", "vid_gen", "-t", "2"};
    const std::vector<std::string> files = ggdiff::ltx_parts::part_args(drop);
    a.insert(a.end(), files.begin(), files.end());
    return a;
}

std::vector<uint8_t> read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

class LtxCli : public ::testing::Test {
  protected:
    void SetUp() override {
        for (const char* name : {"dit", "connectors", "llm", "vae", "audio_vae"}) {
            ASSERT_TRUE(fs::is_regular_file(part(name)))
                << "missing " << part(name) << " (run through ctest: its fixture tests make it)";
        }
        dir_ = e2e::fresh_dir();
    }

    // A 64x64 request of `frames` frames at 16 fps, 2 steps.
    RunResult run(std::vector<std::string> args, const std::string& out, int frames,
                  const std::string& prompt = "a red cat", const std::string& seed = "42") const {
        args.insert(args.end(), {"-p", prompt, "-W", "64", "-H", "64", "--steps", "2", "-s", seed,
                                 "--video-frames", std::to_string(frames), "--fps", "16", "-o",
                                 dir_ + "/" + out});
        return e2e::run_ggdiff(args, dir_, 600);
    }

    void expect_refused(const std::vector<std::string>& args, const std::string& message) const {
        RunResult r = run(args, "x.avi", 1);
        EXPECT_TRUE(r.failed_cleanly()) << r.describe();
        EXPECT_TRUE(contains(r.out + r.err, message)) << message << "\n" << r.describe();
        EXPECT_FALSE(fs::exists(dir_ + "/x.avi"));
        EXPECT_FALSE(fs::exists(dir_ + "/x.png"));
    }

    std::string dir_;
};

TEST_F(LtxCli, InfoNamesLtx2) {
    RunResult r = e2e::run_ggdiff({"-M", "info", "--diffusion-model", part("dit")}, dir_, 60);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    EXPECT_TRUE(contains(r.out, "family:      ltx2 (LTX-2")) << r.describe();
    EXPECT_FALSE(contains(r.out + r.err, "not supported yet")) << r.describe();
}

// PNG frames + WAV: sizes, sample count, determinism per seed; the seed and the prompt move it.
TEST_F(LtxCli, FramesAndSoundTrack) {
    RunResult a = run(parts(), "a_%02d.png", 9);
    ASSERT_TRUE(a.succeeded()) << a.describe();
    for (int i = 0; i < 9; ++i) {
        char name[32];
        std::snprintf(name, sizeof name, "/a_%02d.png", i);
        auto img = ggdiff::read_image(dir_ + name);
        ASSERT_TRUE(img.ok()) << name << " " << a.describe();
        EXPECT_EQ(img->width, 64);
        EXPECT_EQ(img->height, 64);
    }
    EXPECT_FALSE(fs::exists(dir_ + "/a_09.png"));
    const std::vector<uint8_t> wav = read_bytes(dir_ + "/a_00.wav");
    auto track = ggdiff::decode_wav(wav.data(), wav.size());
    ASSERT_TRUE(track.ok()) << track.status().message() << "\n" << a.describe();
    EXPECT_EQ(track->sample_rate, 16000);
    EXPECT_EQ(track->channels, 2);
    EXPECT_EQ(static_cast<int64_t>(track->sample_count()), expected_samples(9, 16));

    RunResult same = run(parts(), "b_%02d.png", 9);
    ASSERT_TRUE(same.succeeded()) << same.describe();
    for (const char* f : {"_00.png", "_04.png", "_08.png", "_00.wav"}) {
        EXPECT_EQ(read_bytes(dir_ + "/a" + f), read_bytes(dir_ + "/b" + f)) << f;
    }
    RunResult seed = run(parts(), "c_%02d.png", 9, "a red cat", "43");
    ASSERT_TRUE(seed.succeeded()) << seed.describe();
    RunResult prompt = run(parts(), "d_%02d.png", 9, "a blue house by the sea");
    ASSERT_TRUE(prompt.succeeded()) << prompt.describe();
    for (const char* other : {"c", "d"}) {
        for (const char* f : {"_00.png", "_08.png"}) {
            auto d = e2e::compare_images(dir_ + "/a" + f, dir_ + "/" + other + f);
            ASSERT_TRUE(d.ok);
            EXPECT_GT(d.mean_abs, 5.0) << other << f;
            std::printf("a%s vs %s%s: mean abs diff %.3f\n", f, other, f, d.mean_abs);
        }
        EXPECT_NE(read_bytes(dir_ + "/a_00.wav"), read_bytes(dir_ + "/" + other + "_00.wav"))
            << other;
    }
}

// AVI: the frames and a PCM track; WebP: the sound beside it.
TEST_F(LtxCli, VideoFilesCarryTheSound) {
    RunResult r = run(parts(), "v.avi", 9);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    EXPECT_TRUE(contains(r.err, "PCM track")) << r.describe();
    const std::vector<uint8_t> avi = read_bytes(dir_ + "/v.avi");
    auto video = ggdiff::decode_video(avi.data(), avi.size());
    ASSERT_TRUE(video.ok()) << video.status().message();
    EXPECT_EQ(video->frames.size(), 9u);
    EXPECT_EQ(video->width, 64);
    EXPECT_EQ(video->fps, 16);
    EXPECT_EQ(video->audio.sample_rate, 16000);
    EXPECT_EQ(static_cast<int64_t>(video->audio.sample_count()), expected_samples(9, 16));
    EXPECT_FALSE(fs::exists(dir_ + "/v.wav"));

    RunResult w = run(parts(), "w.webp", 1);
    ASSERT_TRUE(w.succeeded()) << w.describe();
    // One frame per item: the image and its sound.
    const std::vector<uint8_t> wav = read_bytes(dir_ + "/w.wav");
    auto track = ggdiff::decode_wav(wav.data(), wav.size());
    ASSERT_TRUE(track.ok()) << track.status().message() << "\n" << w.describe();
    EXPECT_EQ(static_cast<int64_t>(track->sample_count()), expected_samples(1, 16));
}

// --temporal-tiling decodes the video in windows of latent frames (here 2, sharing 1): the same
// frames up to the window edges (each window starts from the frame the last one kept, as the
// reference's does), the same sound track (not tiled); a bad --extra-tiling-args key fails
// before anything loads.
TEST_F(LtxCli, TemporalTilingDecodesInWindows) {
    RunResult whole = run(parts(), "u_%02d.png", 17);
    ASSERT_TRUE(whole.succeeded()) << whole.describe();
    std::vector<std::string> tiled_args = parts();
    tiled_args.insert(tiled_args.end(), {"--temporal-tiling", "--extra-tiling-args",
                                         "temporal_tile_frames=2,temporal_tile_overlap=1", "-v"});
    RunResult tiled = run(tiled_args, "t_%02d.png", 17);
    ASSERT_TRUE(tiled.succeeded()) << tiled.describe();
    EXPECT_FALSE(fs::exists(dir_ + "/t_17.png"));
    EXPECT_EQ(read_bytes(dir_ + "/u_00.wav"), read_bytes(dir_ + "/t_00.wav"));
    double most = 0.0, total = 0.0;
    for (int i = 0; i < 17; ++i) {
        char a[32], b[32];
        std::snprintf(a, sizeof a, "/u_%02d.png", i);
        std::snprintf(b, sizeof b, "/t_%02d.png", i);
        auto d = e2e::compare_images(dir_ + a, dir_ + b);
        ASSERT_TRUE(d.ok) << d.error << "\n" << tiled.describe();
        most = std::max(most, d.mean_abs);
        total += d.mean_abs;
    }
    std::printf("temporal tiling vs whole: mean abs diff %.3f per frame, at most %.3f\n",
                total / 17, most);
    EXPECT_GT(most, 0.0) << "the windows changed nothing: was the video tiled at all?";
    EXPECT_LT(total / 17, 12.0);  // 7.4 on this fixture

    std::vector<std::string> bad = parts();
    bad.insert(bad.end(), {"--temporal-tiling", "--extra-tiling-args", "temporal_frames=2"});
    expect_refused(bad, "unknown key 'temporal_frames'");
}

TEST_F(LtxCli, NoAudioVaeNoSound) {
    RunResult r = run(parts("--audio-vae"), "n.avi", 9);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    EXPECT_TRUE(contains(r.err, "without its sound track")) << r.describe();
    const std::vector<uint8_t> avi = read_bytes(dir_ + "/n.avi");
    auto video = ggdiff::decode_video(avi.data(), avi.size());
    ASSERT_TRUE(video.ok()) << video.status().message();
    EXPECT_EQ(video->frames.size(), 9u);
    EXPECT_TRUE(video->audio.empty());
}

TEST_F(LtxCli, RefusesMissingParts) {
    expect_refused(parts("--embeddings-connectors"), "--embeddings-connectors");
    expect_refused(parts("--llm"), "--llm");
    expect_refused(parts("--vae"), "needs its video VAE: pass --vae");
    // The safetensors Gemma holds no vocabulary: the error says where it looked.
    RunResult r = run(parts("--llm-tokenizer"), "x.avi", 1);
    EXPECT_TRUE(r.failed_cleanly()) << r.describe();
    EXPECT_TRUE(contains(r.out + r.err, "tokenizer")) << r.describe();
    EXPECT_TRUE(contains(r.out + r.err, fs::path(part("llm")).parent_path().string()))
        << r.describe();
    // LTX-2's part files on another family.
    std::vector<std::string> other = e2e::model_args();
    other.insert(other.end(), {"--audio-vae", part("audio_vae"), "-p", "x", "-o", dir_ + "/y.png"});
    RunResult o = e2e::run_ggdiff(other, dir_, 120);
    EXPECT_TRUE(o.failed_cleanly()) << o.describe();
    EXPECT_TRUE(contains(o.err, "--audio-vae")) << o.describe();
    EXPECT_TRUE(contains(o.err, "(LTX-2 does)")) << o.describe();
}

}  // namespace
