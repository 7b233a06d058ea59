// Inpainting through the CLI. With an ordinary checkpoint (sd1_mc32) -i with --mask is
// img2img that keeps the init latent outside the mask at every step: a black mask keeps
// the whole init latent (whatever the prompt and strength), a white one is plain img2img,
// grey blends.
// With the inpainting checkpoint of ../shared/golden/sd1_inpaint (whose cases check the
// numbers against the reference) grey rounds to black or white, a mask of another size
// is resized, and text to image works. Bad masks fail before any weight is read.
#include <gtest/gtest.h>

#include "control_support.h"

namespace ggdiff::e2e {
namespace {

class InpaintE2E : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_TRUE(prerequisites_ok());
        dir_ = fresh_dir();
    }
    std::string run(const std::string& model, const std::vector<std::string>& extra,
                    const std::string& name) {
        const std::string out = dir_ + "/" + name + ".png";
        const RunResult r = run_ggdiff(small_request({"-m", model}, extra, out), dir_);
        EXPECT_TRUE(r.succeeded()) << r.describe();
        return r.succeeded() ? out : "";
    }
    std::vector<std::string> masked(const std::string& mask,
                                    const std::vector<std::string>& more = {}) const {
        std::vector<std::string> a = {"-i", init_image_path(), "--mask", mask};
        a.insert(a.end(), more.begin(), more.end());
        return a;
    }
    std::string dir_;
};

TEST_F(InpaintE2E, PlainCheckpointBlendsOutsideTheMask) {
    const std::string black = write_mask(dir_ + "/black.png", 64, 64, 0, 0);
    const std::string white = write_mask(dir_ + "/white.png", 64, 64, 255, 255);
    const std::string grey = write_mask(dir_ + "/grey.png", 64, 64, 128, 128);
    const std::string model = fixture_path();

    // Nothing to repaint: the result is the init latent (the seed's VAE posterior sample
    // of the init image), whatever the prompt and the strength.
    const std::string keep1 = run(model, masked(black), "keep1");
    const std::string keep2 =
        run(model, masked(black, {"-p", "a red bicycle", "--strength", "0.5"}), "keep2");
    // Everything to repaint: plain img2img.
    const std::string all = run(model, masked(white), "all");
    const std::string i2i = run(model, {"-i", init_image_path()}, "i2i");
    // A grey mask is a soft weight: neither of the two.
    const std::string soft = run(model, masked(grey), "soft");
    // The centre square repainted, the rest kept.
    const std::string centre = run(model, masked(center_mask_path()), "centre");
    ASSERT_FALSE(keep1.empty() || keep2.empty() || all.empty() || i2i.empty() || soft.empty() ||
                 centre.empty());

    EXPECT_EQ(image_diff(keep1, keep2), 0.0);
    EXPECT_EQ(image_diff(all, i2i), 0.0);
    EXPECT_GT(image_diff(keep1, i2i), 2.0);
    EXPECT_GT(image_diff(soft, keep1), 0.2);
    EXPECT_GT(image_diff(soft, i2i), 0.5);
    // Inside the square the repaint follows img2img, outside it the kept image (up to the
    // VAE decoder's global attention); both halves differ from the other reference.
    const RegionDiff to_keep = region_diff(centre, keep1, 16, 16, 48, 48);
    const RegionDiff to_i2i = region_diff(centre, i2i, 16, 16, 48, 48);
    EXPECT_LT(to_keep.outside, to_i2i.outside);
    EXPECT_LT(to_i2i.inside, to_keep.inside);
    auto text = read_image_parameters(centre);
    ASSERT_TRUE(text.ok()) << text.status().message();
    EXPECT_NE(text->find("Denoising strength: 0.75"), std::string::npos) << *text;
}

TEST_F(InpaintE2E, InpaintingModelRoundsAndResizesTheMask) {
    ASSERT_TRUE(fs::is_regular_file(inpaint_model_path()))
        << inpaint_model_path() << " missing: run through ctest (fixture_sd1_inpaint_mc32)";
    const std::string model = inpaint_model_path();
    // The golden centre mask, as grey levels that round to it, and at half the size.
    const std::string exact = write_mask(dir_ + "/exact.png", 64, 64, 0, 255, 16, 16, 48, 48);
    const std::string greys = write_mask(dir_ + "/greys.png", 64, 64, 100, 200, 16, 16, 48, 48);
    const std::string small = write_mask(dir_ + "/small.png", 32, 32, 0, 255, 8, 8, 24, 24);
    const std::string a = run(model, masked(exact), "exact");
    const std::string b = run(model, masked(greys), "greys");
    const std::string c = run(model, masked(small), "small");
    const std::string unmasked = run(model, {"-i", init_image_path()}, "unmasked");
    ASSERT_FALSE(a.empty() || b.empty() || c.empty() || unmasked.empty());
    EXPECT_EQ(image_diff(a, b), 0.0);
    EXPECT_EQ(image_diff(a, c), 0.0);
    // Without a mask an inpainting model repaints everything.
    EXPECT_GT(image_diff(a, unmasked), 2.0);
    // Text to image: all of it to paint, nothing known.
    const std::string t2i = run(model, {}, "t2i");
    ASSERT_FALSE(t2i.empty());
    EXPECT_GT(image_diff(t2i, unmasked), 2.0);
}

TEST_F(InpaintE2E, BadMasksFailBeforeLoading) {
    const std::string out = dir_ + "/never.png";
    const std::string missing_model = "/nonexistent/model.safetensors";
    // --mask without -i.
    RunResult r =
        run_ggdiff(small_request({"-m", missing_model}, {"--mask", center_mask_path()}, out), dir_);
    EXPECT_TRUE(r.failed_cleanly()) << r.describe();
    EXPECT_TRUE(contains(r.err, "--mask needs an init image")) << r.err;
    // A mask that is not an image.
    const std::string text_file = dir_ + "/mask.png";
    std::ofstream(text_file) << "not an image";
    r = run_ggdiff(small_request({"-m", missing_model}, masked(text_file), out), dir_);
    EXPECT_TRUE(r.failed_cleanly()) << r.describe();
    EXPECT_TRUE(contains(r.err, "--mask")) << r.err;
    EXPECT_FALSE(contains(r.err, missing_model)) << r.err;
    // A missing mask file.
    r = run_ggdiff(small_request({"-m", missing_model}, masked(dir_ + "/nope.png"), out), dir_);
    EXPECT_TRUE(r.failed_cleanly()) << r.describe();
    EXPECT_TRUE(contains(r.err, "nope.png")) << r.err;
    EXPECT_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace ggdiff::e2e
