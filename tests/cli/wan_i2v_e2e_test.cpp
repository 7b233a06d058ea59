// Wan image-to-video through the CLI on a narrow DiT in the Wan 2.2 I2V layout (36 input
// channels: the noisy latent, 4 mask channels and the latent of the conditioning video): -i
// is the first frame and --end-img the last, both change the video, and families that take
// no end frame refuse --end-img before loading weights.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "../golden/e2e_support.h"
#include "../golden/wan_e2e.h"
#include "../support/wan_vae_diffusers.h"

namespace ggdiff::e2e {
namespace {

namespace fs = std::filesystem;

std::string i2v_dit() {
    return wan::fixture("wan_small_i2v_dit");
}
std::string first_png() {
    return std::string(GGDIFF_SOURCE_DIR) + "/tests/golden/wan_i2v/first.png";
}
std::string last_png() {
    return std::string(GGDIFF_SOURCE_DIR) + "/tests/golden/wan_i2v/last.png";
}

// A 5-frame 64x64 video request of 2 steps at CFG 1 on a narrow DiT, frames to OUT_%d.png.
std::vector<std::string> small_video(const std::string& dit, const std::string& vae,
                                     const std::string& prompt, const std::string& seed,
                                     const std::string& out) {
    // clang-format off
    return {"-M", "vid_gen", "--diffusion-model", dit, "--t5xxl", wan::umt5(), "--vae", vae,
            "--t5xxl-tokenizer", wan::tokenizer(), "-p", prompt, "-W", "64", "-H", "64",
            "--video-frames", "5", "--steps", "2", "--cfg-scale", "1", "-s", seed, "-o",
            out + "_%d.png"};
    // clang-format on
}

class WanI2v : public ::testing::Test {
  protected:
    void SetUp() override {
        for (const std::string& f :
             {binary_path(), i2v_dit(), wan::umt5(), wan::vae(), wan::fixture("wan_small_ti2v_dit"),
              wan::fixture("wan22_vae_tiny")}) {
            ASSERT_TRUE(fs::is_regular_file(f)) << "missing " << f << " (run through ctest)";
        }
        dir_ = fresh_dir();
    }
    // Paths of the frames of a 5-frame 64x64 video from the narrow I2V DiT with `extra`
    // arguments.
    std::vector<std::string> video(const std::string& name, const std::vector<std::string>& extra) {
        std::vector<std::string> args =
            small_video(i2v_dit(), wan::vae(), "a cat in a garden", "7", dir_ + "/" + name);
        args.insert(args.end(), extra.begin(), extra.end());
        RunResult r = run_ggdiff(args, dir_, 600);
        EXPECT_TRUE(r.succeeded()) << r.describe();
        std::vector<std::string> frames;
        for (int i = 0; i < 5; ++i)
            frames.push_back(dir_ + "/" + name + "_" + std::to_string(i) + ".png");
        return frames;
    }
    std::string dir_;
};

// Mean absolute difference over the frames (0-255); -1 when a frame is missing.
double video_diff(const std::vector<std::string>& a, const std::vector<std::string>& b) {
    double sum = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        const ImageDiff d = compare_images(a[i], b[i]);
        if (!d.ok) {
            ADD_FAILURE() << d.error;
            return -1;
        }
        sum += d.mean_abs;
    }
    return sum / static_cast<double>(a.size());
}

TEST_F(WanI2v, FirstAndLastFramesCondition) {
    const auto none = video("none", {});
    const auto first = video("first", {"-i", first_png()});
    const auto again = video("again", {"-i", first_png()});
    const auto both = video("both", {"-i", first_png(), "--end-img", last_png()});
    EXPECT_EQ(video_diff(first, again), 0.0) << "not reproducible";
    EXPECT_GT(video_diff(none, first), 1.0) << "-i did not change the video";
    EXPECT_GT(video_diff(first, both), 1.0) << "--end-img did not change the video";
}

// Wan 2.2 TI2V (48-channel latents, no conditioning channels): -i holds latent frame 0 at the
// image's latent, so the first frame (decoded from latent frame 0 alone: the VAE is causal) is
// the same whatever the prompt and seed, and differs from a text-only video's.
TEST_F(WanI2v, Ti2vHoldsTheFirstFrame) {
    auto ti2v = [&](const std::string& name, const std::string& prompt, const std::string& seed,
                    bool image) {
        std::vector<std::string> args =
            small_video(wan::fixture("wan_small_ti2v_dit"), wan::fixture("wan22_vae_tiny"), prompt,
                        seed, dir_ + "/" + name);
        if (image) {
            args.push_back("-i");
            args.push_back(first_png());
        }
        RunResult r = run_ggdiff(args, dir_, 600);
        EXPECT_TRUE(r.succeeded()) << r.describe();
        return std::vector<std::string>{dir_ + "/" + name + "_0.png", dir_ + "/" + name + "_4.png"};
    };
    const auto a = ti2v("a", "a cat", "1", true);
    const auto b = ti2v("b", "a castle at night", "2", true);
    const auto t = ti2v("t", "a cat", "1", false);
    const ImageDiff held = compare_images(a[0], b[0]);
    ASSERT_TRUE(held.ok) << held.error;
    EXPECT_EQ(held.max_abs, 0) << "the first frame moved with the prompt and seed";
    EXPECT_GT(compare_images(a[1], b[1]).mean_abs, 0.5) << "the last frame did not move";
    // (The tiny random VAE decodes everything close to grey: small differences are real ones.)
    EXPECT_GT(compare_images(a[0], t[0]).mean_abs, 0.1) << "-i did not set the first frame";
}

// A copy of the safetensors file `src` with its tensors renamed (the data unchanged).
void write_renamed(const std::string& src, const std::string& dst,
                   const std::function<std::string(const std::string&)>& rename) {
    std::ifstream in(src, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_GT(bytes.size(), 8u);
    uint64_t len = 0;
    for (int i = 7; i >= 0; --i) len = (len << 8) | static_cast<unsigned char>(bytes[i]);
    ASSERT_LE(8 + len, bytes.size());
    const nlohmann::ordered_json header = nlohmann::ordered_json::parse(bytes.substr(8, len));
    nlohmann::ordered_json renamed;
    for (const auto& [name, value] : header.items())
        renamed[name == "__metadata__" ? name : rename(name)] = value;
    std::string text = renamed.dump();
    text.append((8 - text.size() % 8) % 8, ' ');
    std::ofstream out(dst, std::ios::binary | std::ios::trunc);
    for (int i = 0; i < 8; ++i) out.put(static_cast<char>((text.size() >> (8 * i)) & 0xff));
    out << text << bytes.substr(8 + len);
}

// The Wan 2.2 VAE in diffusers AutoencoderKLWan names (a Wan2.2-TI2V-5B-Diffusers vae/ file)
// makes the same video as the original names, through -i's encode and the decode.
TEST_F(WanI2v, Ti2vWithTheDiffusersVae) {
    const std::string vae = dir_ + "/wan22_vae_diffusers.safetensors";
    write_renamed(wan::fixture("wan22_vae_tiny"), vae, wan_vae_test::to_diffusers22);
    std::vector<std::string> frames[2];
    for (int k = 0; k < 2; ++k) {
        const std::string name = k == 0 ? "orig" : "diffusers";
        std::vector<std::string> args = small_video(wan::fixture("wan_small_ti2v_dit"),
                                                    k == 0 ? wan::fixture("wan22_vae_tiny") : vae,
                                                    "a cat", "3", dir_ + "/" + name);
        args.push_back("-i");
        args.push_back(first_png());
        RunResult r = run_ggdiff(args, dir_, 600);
        ASSERT_TRUE(r.succeeded()) << r.describe();
        if (k == 1) {
            EXPECT_TRUE(contains(r.out + r.err, "diffusers Wan VAE renamed")) << r.describe();
        }
        for (int i = 0; i < 5; ++i)
            frames[k].push_back(dir_ + "/" + name + "_" + std::to_string(i) + ".png");
    }
    EXPECT_EQ(video_diff(frames[0], frames[1]), 0.0);
}

// --vae-tiling on a video decodes each region as a whole video (causal over time) and
// blends the regions: one tile over the whole latent is the untiled video exactly, 4x4 tiles
// (of an 8x8 latent) come close to it.
TEST_F(WanI2v, VaeTilingDecodesVideoRegions) {
    const auto whole = video("whole", {});
    const auto one = video("one", {"--vae-tiling", "--vae-tile-size", "8x8"});
    const auto tiled = video("tiled", {"--vae-tiling", "--vae-tile-size", "4x4"});
    EXPECT_EQ(video_diff(whole, one), 0.0);
    const double d = video_diff(whole, tiled);
    EXPECT_GT(d, 0.0) << "no tiles were made";
    EXPECT_LT(d, 12.0);  // 4.9 here, on frames of standard deviation 24-38
}

TEST_F(WanI2v, EndImageNeedsAFirstLastFrameModel) {
    // A text-to-video Wan DiT: no conditioning channels.
    std::vector<std::string> args = {
        "-M", "vid_gen",           "-p", "x",       "-W", "64",        "-H",
        "64", "--video-frames",    "5",  "--steps", "1",  "--end-img", last_png(),
        "-o", dir_ + "/t2v_%d.png"};
    for (const std::string& a : wan::model_args()) args.push_back(a);
    RunResult r = run_ggdiff(args, dir_, 600);
    EXPECT_FALSE(r.succeeded());
    EXPECT_TRUE(contains(r.err, "--end-img is not supported for Wan")) << r.describe();
    EXPECT_FALSE(contains(r.err, "sampling")) << r.describe();

    // An image model.
    RunResult s = run_ggdiff({"-m", fixture_path(), "-p", "x", "-W", "64", "-H", "64", "--steps",
                              "1", "--end-img", last_png(), "-o", dir_ + "/sd1.png"},
                             dir_, 300);
    EXPECT_FALSE(s.succeeded());
    EXPECT_TRUE(contains(s.err, "--end-img is not supported for SD1")) << s.describe();

    // Not an image: refused when read.
    RunResult bad = run_ggdiff({"-m", fixture_path(), "-p", "x", "--end-img",
                                std::string(GGDIFF_SOURCE_DIR) + "/CMakeLists.txt"},
                               dir_, 300);
    EXPECT_FALSE(bad.succeeded());
    EXPECT_TRUE(contains(bad.err, "--end-img")) << bad.describe();
}

}  // namespace
}  // namespace ggdiff::e2e
