// Seamless tiling end to end on the SD1 fixture: with --circularx the image's right and left
// columns continue each other (their difference is that of neighbouring columns inside the
// image) while top and bottom rows stay as unrelated as without it; --circulary the same
// across the top/bottom edge; VAE tiling keeps the wrap. FLUX.1's DiT wraps too.
#include <gtest/gtest.h>

#include <cstdlib>

#include "../golden/e2e_support.h"
#include "../golden/flux_e2e.h"
#include "image/image_io.h"

namespace {

using namespace ggdiff::e2e;

struct Seams {
    double x = 0;        // mean |last column - first column|
    double y = 0;        // mean |last row - first row|
    double inner_x = 0;  // mean |column i+1 - column i| inside the image
    double inner_y = 0;  // mean |row j+1 - row j|
};

Seams seams(const std::string& path) {
    Seams s;
    auto img = ggdiff::read_image(path);
    EXPECT_TRUE(img.ok()) << path;
    if (!img.ok()) return s;
    const int w = img->width, h = img->height, c = img->channels;
    auto px = [&](int x, int y, int k) {
        return static_cast<double>(img->pixels[(static_cast<size_t>(y) * w + x) * c + k]);
    };
    double n = 0;
    for (int y = 0; y < h; ++y) {
        for (int k = 0; k < 3; ++k) {
            s.x += std::abs(px(w - 1, y, k) - px(0, y, k));
            for (int x = 0; x + 1 < w; ++x) s.inner_x += std::abs(px(x + 1, y, k) - px(x, y, k));
            n += 1;
        }
    }
    s.x /= n;
    s.inner_x /= n * (w - 1);
    n = 0;
    for (int x = 0; x < w; ++x) {
        for (int k = 0; k < 3; ++k) {
            s.y += std::abs(px(x, h - 1, k) - px(x, 0, k));
            for (int y = 0; y + 1 < h; ++y) s.inner_y += std::abs(px(x, y + 1, k) - px(x, y, k));
            n += 1;
        }
    }
    s.y /= n;
    s.inner_y /= n * (h - 1);
    return s;
}

RunResult run(const std::vector<std::string>& flags, const std::string& out,
              const std::string& dir) {
    std::vector<std::string> a = model_args();
    const std::vector<std::string> req = euler_request(4, "2");
    a.insert(a.end(), req.begin(), req.end());
    a.insert(a.end(), flags.begin(), flags.end());
    a.insert(a.end(), {"-o", out});
    return run_ggdiff(a, dir, 900);
}

TEST(Circular, EdgesContinueEachOtherOnTheWrappedAxis) {
    ASSERT_TRUE(prerequisites_ok());
    const std::string dir = fresh_dir();
    RunResult plain = run({}, dir + "/plain.png", dir);
    ASSERT_TRUE(plain.succeeded()) << plain.describe();
    RunResult rx = run({"--circularx"}, dir + "/x.png", dir);
    ASSERT_TRUE(rx.succeeded()) << rx.describe();
    RunResult ry = run({"--circulary"}, dir + "/y.png", dir);
    ASSERT_TRUE(ry.succeeded()) << ry.describe();
    // VAE tiles smaller than the image: the tiles are widened on the wrapped axis.
    RunResult tiled =
        run({"--circular", "--vae-tiling", "--vae-tile-size", "4x4"}, dir + "/tiled.png", dir);
    ASSERT_TRUE(tiled.succeeded()) << tiled.describe();
    RunResult both = run({"--circular"}, dir + "/both.png", dir);
    ASSERT_TRUE(both.succeeded()) << both.describe();

    const Seams p = seams(dir + "/plain.png"), x = seams(dir + "/x.png"), y = seams(dir + "/y.png"),
                b = seams(dir + "/both.png");
    const std::string numbers =
        "plain x " + std::to_string(p.x) + " y " + std::to_string(p.y) + " inner " +
        std::to_string(p.inner_x) + "/" + std::to_string(p.inner_y) + "; circularx x " +
        std::to_string(x.x) + " y " + std::to_string(x.y) + " inner " + std::to_string(x.inner_x) +
        "/" + std::to_string(x.inner_y) + "; circulary x " + std::to_string(y.x) + " y " +
        std::to_string(y.y) + " inner " + std::to_string(y.inner_x) + "/" +
        std::to_string(y.inner_y) + "; circular x " + std::to_string(b.x) + " y " +
        std::to_string(b.y) + " inner " + std::to_string(b.inner_x) + "/" +
        std::to_string(b.inner_y);
    // The wrapped seam is no rougher than the image inside (and much smoother than the plain
    // image's seam); the other axis' seam stays as rough as without wrapping. Measured: the
    // wrapped seams 0.8-0.95 x the inside, the others 1.5-1.9 x.
    EXPECT_LT(x.x, 1.1 * x.inner_x) << numbers;
    EXPECT_LT(x.x, 0.75 * p.x) << numbers;
    EXPECT_GT(x.y, 1.3 * x.inner_y) << numbers;
    EXPECT_GT(p.x, 1.3 * p.inner_x) << numbers;
    EXPECT_LT(y.y, 1.1 * y.inner_y) << numbers;
    EXPECT_LT(y.y, 0.75 * p.y) << numbers;
    EXPECT_GT(y.x, 1.3 * y.inner_x) << numbers;
    EXPECT_GT(p.y, 1.3 * p.inner_y) << numbers;
    EXPECT_LT(b.x, 1.1 * b.inner_x) << numbers;
    EXPECT_LT(b.y, 1.1 * b.inner_y) << numbers;
    // Tiles that span the image decode exactly as untiled.
    const ImageDiff d = compare_images(dir + "/tiled.png", dir + "/both.png");
    ASSERT_TRUE(d.ok) << d.error;
    EXPECT_LT(d.mean_abs, 0.01) << "max " << d.max_abs;
}

// FLUX.1 (RoPE positions and VAE wrap): --circularx changes the image and makes its
// left/right seam as smooth as the inside while the top/bottom one stays rough; a latent that
// is not whole patches (72 pixels: 9 latent columns) is padded by wrap-around and runs.
TEST(Circular, FluxWrapsItsRopeAndVae) {
    ASSERT_TRUE(flux::prerequisites_ok());
    const std::string dir = fresh_dir();
    auto run_flux = [&](const std::vector<std::string>& flags, const std::string& out) {
        std::vector<std::string> a = flux::model_args();
        for (const std::string& f : flux::case_args("flux_euler")) a.push_back(f);
        a.insert(a.end(), flags.begin(), flags.end());
        a.insert(a.end(), {"-o", out});
        return run_ggdiff(a, dir, 600);
    };
    RunResult plain = run_flux({}, dir + "/plain.png");
    ASSERT_TRUE(plain.succeeded()) << plain.describe();
    RunResult rx = run_flux({"--circularx"}, dir + "/x.png");
    ASSERT_TRUE(rx.succeeded()) << rx.describe();
    RunResult odd = run_flux({"--circular", "-W", "72"}, dir + "/odd.png");
    ASSERT_TRUE(odd.succeeded()) << odd.describe();

    const Seams p = seams(dir + "/plain.png"), x = seams(dir + "/x.png");
    const std::string numbers = "plain x " + std::to_string(p.x) + " y " + std::to_string(p.y) +
                                " inner " + std::to_string(p.inner_x) + "/" +
                                std::to_string(p.inner_y) + "; circularx x " + std::to_string(x.x) +
                                " y " + std::to_string(x.y) + " inner " +
                                std::to_string(x.inner_x) + "/" + std::to_string(x.inner_y);
    const ImageDiff d = compare_images(dir + "/x.png", dir + "/plain.png");
    ASSERT_TRUE(d.ok) << d.error;
    EXPECT_GT(d.mean_abs, 1.0) << numbers;
    EXPECT_LT(x.x, 1.1 * x.inner_x) << numbers;
    EXPECT_LT(x.x, 0.75 * p.x) << numbers;
    EXPECT_GT(x.y, 1.3 * x.inner_y) << numbers;
    const Seams o = seams(dir + "/odd.png");
    EXPECT_LT(o.x, 1.1 * o.inner_x) << "72x64: x " << o.x << " inner " << o.inner_x;
    EXPECT_LT(o.y, 1.1 * o.inner_y) << "72x64: y " << o.y << " inner " << o.inner_y;
}

}  // namespace
