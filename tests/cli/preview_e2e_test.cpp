// Live previews from the CLI (--preview, --preview-path, --preview-interval, --preview-noisy,
// --taesd-preview-only) on the SD1 fixture: the file is written during sampling at the
// interval's steps, has the kind's size, and leaves the final image as it was.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "../golden/e2e_support.h"
#include "image/image_io.h"
#include "models/vae/taesd.h"

namespace {

using namespace ggdiff::e2e;

// The request every case makes: 4 euler steps at 64x64, -v for the per-preview log lines.
std::vector<std::string> request(const std::string& dir, const std::string& out) {
    std::vector<std::string> args = model_args();
    for (const std::string& a : euler_request(4)) args.push_back(a);
    args.insert(args.end(), {"-o", dir + "/" + out, "-v"});
    return args;
}

std::vector<std::string> with(std::vector<std::string> args, std::vector<std::string> more) {
    args.insert(args.end(), more.begin(), more.end());
    return args;
}

// Lines "preview of step N" the run logged, as the steps.
std::vector<int> preview_steps(const std::string& log) {
    std::vector<int> steps;
    const std::string key = "preview of step ";
    for (size_t at = log.find(key); at != std::string::npos; at = log.find(key, at + 1)) {
        steps.push_back(std::atoi(log.c_str() + at + key.size()));
    }
    return steps;
}

// A TAESD file with random weights in the diffusers layout, made with make_fixture.py.
std::string make_taesd(const std::string& dir) {
    ggdiff::models::TaesdConfig cfg;
    cfg.has_encoder = true;
    const std::string list = dir + "/taesd.tensors";
    {
        std::ofstream out(list);
        for (const auto& [name, shape] : ggdiff::models::taesd_tensor_shapes(cfg, "")) {
            out << name << " ";
            for (size_t i = 0; i < shape.size(); ++i) out << (i ? "," : "") << shape[i];
            out << "\n";
        }
    }
    const std::string taesd = dir + "/taesd.safetensors";
    const std::string gen = shared_dir() + "/tools/make_fixture.py";
    if (std::system((gen + " " + list + " " + taesd + " --seed 3 > /dev/null").c_str()) != 0) {
        return "";
    }
    return taesd;
}

TEST(Preview, ProjWritesLatentSizedPreviewsAtTheInterval) {
    if (!prerequisites_ok()) GTEST_SKIP() << "fixture or python/numpy missing";
    const std::string dir = fresh_dir();
    RunResult plain = run_ggdiff(request(dir, "plain.png"), dir);
    ASSERT_TRUE(plain.succeeded()) << plain.describe();
    EXPECT_TRUE(preview_steps(plain.err).empty()) << plain.err;
    EXPECT_FALSE(std::filesystem::exists(dir + "/preview.png"));

    const std::string path = dir + "/live.png";
    RunResult every =
        run_ggdiff(with(request(dir, "every.png"),
                        {"--preview", "proj", "--preview-interval", "1", "--preview-path", path}),
                   dir);
    ASSERT_TRUE(every.succeeded()) << every.describe();
    EXPECT_EQ(preview_steps(every.err), (std::vector<int>{1, 2, 3, 4})) << every.err;
    auto img = ggdiff::read_image(path);
    ASSERT_TRUE(img.ok()) << img.status().message();
    EXPECT_EQ(img->width, 8);  // the latent's size: 64 / 8
    EXPECT_EQ(img->height, 8);
    EXPECT_EQ(img->channels, 3);
    // Previews only look: the image is the one made without them.
    const ImageDiff same = compare_images(dir + "/every.png", dir + "/plain.png");
    ASSERT_TRUE(same.ok) << same.error;
    EXPECT_EQ(same.max_abs, 0);

    // Every second step. The noisy latent (x times c_in) of step 4 is close to its denoised
    // estimate, but not the same: were the flag ignored, this preview would be the one above.
    const std::string noisy = dir + "/noisy.png";
    RunResult second =
        run_ggdiff(with(request(dir, "second.png"), {"--preview", "proj", "--preview-interval", "2",
                                                     "--preview-path", noisy, "--preview-noisy"}),
                   dir);
    ASSERT_TRUE(second.succeeded()) << second.describe();
    EXPECT_EQ(preview_steps(second.err), (std::vector<int>{2, 4})) << second.err;
    const ImageDiff differs = compare_images(noisy, path);
    ASSERT_TRUE(differs.ok) << differs.error;
    EXPECT_GT(differs.mean_abs, 0.0);
}

TEST(Preview, VaeDecodesImageSizedPreviewsAndTheLastIsTheImage) {
    if (!prerequisites_ok()) GTEST_SKIP() << "fixture or python/numpy missing";
    const std::string dir = fresh_dir();
    const std::string path = dir + "/vae.png";
    RunResult r = run_ggdiff(
        with(request(dir, "out.png"), {"--preview", "vae", "--preview-path", path}), dir);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    EXPECT_EQ(preview_steps(r.err), (std::vector<int>{1, 2, 3, 4})) << r.err;
    auto img = ggdiff::read_image(path);
    ASSERT_TRUE(img.ok()) << img.status().message();
    EXPECT_EQ(img->width, 64);
    EXPECT_EQ(img->height, 64);
    // Euler's last step lands on its denoised estimate: the last preview is the image.
    const ImageDiff d = compare_images(path, dir + "/out.png");
    ASSERT_TRUE(d.ok) << d.error;
    EXPECT_LE(d.max_abs, 1);
}

TEST(Preview, TaeNeedsTaesdAndTaesdPreviewOnlyKeepsTheVae) {
    if (!prerequisites_ok()) GTEST_SKIP() << "fixture or python/numpy missing";
    const std::string dir = fresh_dir();
    // Without a TAESD file: a clear error before any step.
    RunResult refused = run_ggdiff(with(request(dir, "no.png"), {"--preview", "tae"}), dir);
    EXPECT_TRUE(refused.failed_cleanly()) << refused.describe();
    EXPECT_TRUE(contains(refused.err, "--preview tae needs a TAESD file (--taesd)")) << refused.err;
    EXPECT_FALSE(std::filesystem::exists(dir + "/no.png"));

    const std::string taesd = make_taesd(dir);
    ASSERT_FALSE(taesd.empty()) << "make_fixture.py failed";
    RunResult kl = run_ggdiff(request(dir, "kl.png"), dir);
    ASSERT_TRUE(kl.succeeded()) << kl.describe();

    // --taesd-preview-only: TAESD previews, the full VAE's final image.
    const std::string path = dir + "/tae.png";
    RunResult only = run_ggdiff(
        with(request(dir, "only.png"), {"--taesd", taesd, "--taesd-preview-only", "--preview",
                                        "tae", "--preview-interval", "4", "--preview-path", path}),
        dir);
    ASSERT_TRUE(only.succeeded()) << only.describe();
    EXPECT_EQ(preview_steps(only.err), (std::vector<int>{4})) << only.err;
    auto img = ggdiff::read_image(path);
    ASSERT_TRUE(img.ok()) << img.status().message();
    EXPECT_EQ(img->width, 64);
    EXPECT_EQ(img->height, 64);
    const ImageDiff same = compare_images(dir + "/only.png", dir + "/kl.png");
    ASSERT_TRUE(same.ok) << same.error;
    EXPECT_EQ(same.max_abs, 0);
    // The last preview is TAESD's picture of the final latent, not the VAE's.
    const ImageDiff tiny = compare_images(path, dir + "/kl.png");
    ASSERT_TRUE(tiny.ok) << tiny.error;
    EXPECT_GT(tiny.mean_abs, 1.0);

    // Without --taesd-preview-only TAESD decodes the final image too, as --taesd alone does.
    RunResult both = run_ggdiff(with(request(dir, "both.png"), {"--taesd", taesd}), dir);
    ASSERT_TRUE(both.succeeded()) << both.describe();
    const ImageDiff tae_final = compare_images(dir + "/both.png", path);
    ASSERT_TRUE(tae_final.ok) << tae_final.error;
    EXPECT_LE(tae_final.max_abs, 1);
}

TEST(Preview, BadValuesAreRefusedWhenParsed) {
    if (!prerequisites_ok()) GTEST_SKIP() << "fixture or python/numpy missing";
    const std::string dir = fresh_dir();
    RunResult kind = run_ggdiff(with(request(dir, "a.png"), {"--preview", "png"}), dir);
    EXPECT_TRUE(kind.failed_cleanly()) << kind.describe();
    EXPECT_TRUE(contains(kind.err, "--preview")) << kind.err;
    RunResult interval = run_ggdiff(
        with(request(dir, "b.png"), {"--preview", "proj", "--preview-interval", "0"}), dir);
    EXPECT_TRUE(interval.failed_cleanly()) << interval.describe();
    EXPECT_TRUE(contains(interval.err, "--preview-interval")) << interval.err;
    // A preview file that could never be written fails before the model is loaded.
    RunResult path = run_ggdiff(
        with(request(dir, "c.png"), {"--preview", "proj", "--preview-path", dir + "/x.txt"}), dir);
    EXPECT_TRUE(path.failed_cleanly()) << path.describe();
    EXPECT_TRUE(contains(path.err, "--preview-path")) << path.err;
}

}  // namespace
