// --taesd end to end: a TAESD checkpoint (random weights in the diffusers layout, made
// at test time) replaces the KL VAE for decoding.
#include <gtest/gtest.h>

#include <fstream>

#include "../golden/e2e_support.h"
#include "image/image_io.h"
#include "models/vae/taesd.h"

namespace {

using namespace ggdiff::e2e;

// Writes the tensor list make_fixture.py reads ("name d0,d1,..." per line).
std::string write_taesd_list(const std::string& dir) {
    ggdiff::models::TaesdConfig cfg;
    cfg.has_encoder = true;
    const std::string path = dir + "/taesd.tensors";
    std::ofstream out(path);
    for (const auto& [name, shape] : ggdiff::models::taesd_tensor_shapes(cfg, "")) {
        out << name << " ";
        for (size_t i = 0; i < shape.size(); ++i) out << (i ? "," : "") << shape[i];
        out << "\n";
    }
    return path;
}

TEST(Taesd, DecodesWithTheTinyAutoencoder) {
    if (!prerequisites_ok()) GTEST_SKIP() << "fixture or python/numpy missing";
    const std::string dir = fresh_dir();
    const std::string list = write_taesd_list(dir);
    const std::string taesd = dir + "/taesd.safetensors";
    const std::string gen = shared_dir() + "/tools/make_fixture.py";
    ASSERT_EQ(std::system((gen + " " + list + " " + taesd + " --seed 3 > /dev/null").c_str()), 0);

    std::vector<std::string> args = model_args();
    for (const char* a : {"-p", "a red cube", "-W", "64", "-H", "64", "--steps", "2",
                          "--sampling-method", "euler", "-s", "9"}) {
        args.push_back(a);
    }
    std::vector<std::string> kl = args, tiny = args;
    kl.insert(kl.end(), {"-o", dir + "/kl.png"});
    tiny.insert(tiny.end(), {"--taesd", taesd, "-o", dir + "/tiny.png"});
    RunResult a = run_ggdiff(kl, dir);
    ASSERT_TRUE(a.succeeded()) << a.describe();
    RunResult b = run_ggdiff(tiny, dir);
    ASSERT_TRUE(b.succeeded()) << b.describe();

    auto img = ggdiff::read_image(dir + "/tiny.png");
    ASSERT_TRUE(img.ok()) << img.status().message();
    EXPECT_EQ(img->width, 64);
    EXPECT_EQ(img->height, 64);
    // Same latent, another decoder: the pictures differ.
    EXPECT_GT(compare_images(dir + "/tiny.png", dir + "/kl.png").mean_abs, 1.0);

    // A TAESD file missing a tensor is named.
    RunResult bad = run_ggdiff(
        [&] {
            std::vector<std::string> v = args;
            v.insert(v.end(), {"--taesd", fixture_path(), "-o", dir + "/bad.png"});
            return v;
        }(),
        dir);
    EXPECT_TRUE(bad.failed_cleanly()) << bad.describe();
    EXPECT_TRUE(contains(bad.err, "taesd")) << bad.err;
}

}  // namespace

namespace {

using namespace ggdiff::e2e;

TEST(VaeTiling, TiledDecodeRunsAndStaysClose) {
    if (!prerequisites_ok()) GTEST_SKIP() << "fixture or python/numpy missing";
    const std::string dir = fresh_dir();
    std::vector<std::string> args = model_args();
    for (const char* a : {"-p", "a red cube", "-W", "64", "-H", "64", "--steps", "2",
                          "--sampling-method", "euler", "-s", "9"}) {
        args.push_back(a);
    }
    std::vector<std::string> whole = args, tiled = args;
    whole.insert(whole.end(), {"-o", dir + "/whole.png"});
    tiled.insert(tiled.end(), {"--vae-tiling", "--vae-tile-size", "4x4", "-o", dir + "/tiled.png"});
    RunResult a = run_ggdiff(whole, dir);
    ASSERT_TRUE(a.succeeded()) << a.describe();
    RunResult b = run_ggdiff(tiled, dir);
    ASSERT_TRUE(b.succeeded()) << b.describe();
    const ImageDiff d = compare_images(dir + "/tiled.png", dir + "/whole.png");
    // Tiles normalize on their own statistics, so the result is close, not identical.
    EXPECT_GT(d.mean_abs, 0.0);
    EXPECT_LT(d.mean_abs, 40.0);
}

}  // namespace
