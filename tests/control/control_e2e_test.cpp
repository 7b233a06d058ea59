// ControlNet through the CLI on the narrow sd1_mc32 checkpoint and its test ControlNet
// (tests/fixtures/controlnet_sd1_mc32.tensors; the full-width pair is checked against the
// reference images by the sd1_control golden suite): strength 0 is exactly no control,
// other strengths and --canny change the image, img2img takes a ControlNet, and misuse
// fails with a clear message before any weight is read.
#include <gtest/gtest.h>

#include "control_support.h"

namespace ggdiff::e2e {
namespace {

std::vector<std::string> with_control(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> a = {"-m",
                                  fixture_path(),
                                  "--control-net",
                                  control_net_path(),
                                  "--control-image",
                                  control_image_path()};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
}

class ControlE2E : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_TRUE(prerequisites_ok());
        ASSERT_TRUE(fs::is_regular_file(control_net_path()))
            << control_net_path() << " missing: run through ctest (fixture_controlnet_sd1_mc32)";
        dir_ = fresh_dir();
    }
    // Runs a small request and returns the output path ("" and a failure if it failed).
    std::string run(const std::vector<std::string>& model, const std::vector<std::string>& extra,
                    const std::string& name) {
        const std::string out = dir_ + "/" + name + ".png";
        const RunResult r = run_ggdiff(small_request(model, extra, out), dir_);
        EXPECT_TRUE(r.succeeded()) << r.describe();
        return r.succeeded() ? out : "";
    }
    std::string dir_;
};

TEST_F(ControlE2E, StrengthsAndCanny) {
    const std::string plain = run({"-m", fixture_path()}, {}, "plain");
    const std::string zero = run(with_control({"--control-strength", "0"}), {}, "zero");
    const std::string half = run(with_control({"--control-strength", "0.5"}), {}, "half");
    const std::string full = run(with_control({"--control-strength", "1"}), {}, "full");
    const std::string canny =
        run(with_control({"--control-strength", "1", "--canny"}), {}, "canny");
    ASSERT_FALSE(plain.empty() || zero.empty() || half.empty() || full.empty() || canny.empty());
    // Residuals scaled by 0 leave the UNet exactly as without a ControlNet.
    EXPECT_EQ(image_diff(zero, plain), 0.0);
    // Each strength and the edge map steer differently.
    EXPECT_GT(image_diff(half, plain), 1.0);
    EXPECT_GT(image_diff(full, plain), 1.0);
    EXPECT_GT(image_diff(full, half), 0.5);
    EXPECT_GT(image_diff(canny, full), 0.5);
    // The default strength is 0.9: between the two, different from both.
    const std::string dflt = run(with_control(), {}, "default");
    ASSERT_FALSE(dflt.empty());
    EXPECT_GT(image_diff(dflt, full), 0.0);
    EXPECT_GT(image_diff(dflt, half), 0.0);
}

TEST_F(ControlE2E, Img2ImgWithControl) {
    const std::vector<std::string> i2i = {"-i",  init_image_path(), "--strength",
                                          "0.9", "--steps",         "8"};
    const std::string plain = run({"-m", fixture_path()}, i2i, "i2i");
    const std::string ctl = run(with_control({"--control-strength", "1"}), i2i, "i2i_control");
    ASSERT_FALSE(plain.empty() || ctl.empty());
    // The fixture's img2img stays close to its init latent, so the ControlNet moves it
    // less than text to image, but visibly.
    EXPECT_GT(image_diff(ctl, plain), 0.2);
    auto text = read_image_parameters(ctl);
    ASSERT_TRUE(text.ok()) << text.status().message();
    EXPECT_NE(text->find("Denoising strength: 0.9"), std::string::npos) << *text;
}

// --auto-fit plans the ControlNet's weights with the denoiser's (it runs on the same device):
// the dry run's diffusion component grows by exactly the ControlNet file's tensor bytes.
TEST_F(ControlE2E, AutoFitCountsTheControlNet) {
    auto diffusion_bytes = [&](std::vector<std::string> args) -> int64_t {
        args.insert(args.end(), {"--auto-fit", "--fit-dry-run"});
        const RunResult r = run_ggdiff(args, dir_);
        EXPECT_TRUE(r.succeeded()) << r.describe();
        const std::string key = "\"module\":\"diffusion\",\"params_bytes\":";
        const size_t at = r.out.find(key);
        EXPECT_NE(at, std::string::npos) << r.out;
        return at == std::string::npos ? -1 : std::stoll(r.out.substr(at + key.size()));
    };
    const int64_t plain = diffusion_bytes({"-m", fixture_path()});
    const int64_t with =
        diffusion_bytes({"-m", fixture_path(), "--control-net", control_net_path()});
    // A safetensors file: 8 bytes of header length, the JSON header, then the tensors.
    std::ifstream f(control_net_path(), std::ios::binary);
    uint64_t header = 0;
    f.read(reinterpret_cast<char*>(&header), 8);
    const int64_t tensors = static_cast<int64_t>(fs::file_size(control_net_path()) - 8 - header);
    EXPECT_GT(plain, 0);
    EXPECT_EQ(with - plain, tensors);
}

TEST_F(ControlE2E, MisuseIsAClearError) {
    const std::string out = dir_ + "/never.png";
    // No ControlNet for the control image: refused before the (missing) model is read.
    RunResult r = run_ggdiff(small_request({"-m", "/nonexistent/model.safetensors"},
                                           {"--control-image", control_image_path()}, out),
                             dir_);
    EXPECT_TRUE(r.failed_cleanly()) << r.describe();
    EXPECT_TRUE(contains(r.err, "--control-image needs a ControlNet")) << r.err;

    // A control image that is not an image, named, before the model is read.
    const std::string text_file = dir_ + "/not_an_image.png";
    std::ofstream(text_file) << "hello";
    r = run_ggdiff(small_request({"-m", "/nonexistent/model.safetensors", "--control-net",
                                  control_net_path(), "--control-image", text_file},
                                 {}, out),
                   dir_);
    EXPECT_TRUE(r.failed_cleanly()) << r.describe();
    EXPECT_TRUE(contains(r.err, "--control-image")) << r.err;
    EXPECT_FALSE(contains(r.err, "/nonexistent/model.safetensors")) << r.err;

    // A checkpoint given as --control-net holds no ControlNet.
    r = run_ggdiff(small_request({"-m", fixture_path(), "--control-net", fixture_path(),
                                  "--control-image", control_image_path()},
                                 {}, out),
                   dir_);
    EXPECT_TRUE(r.failed_cleanly()) << r.describe();
    EXPECT_TRUE(contains(r.err, "no ControlNet found")) << r.err;

    // A ControlNet made for another UNet width.
    const std::string wide =
        std::string(GGDIFF_BINARY_DIR) + "/fixtures/controlnet_sd1_mc320.safetensors";
    if (fs::is_regular_file(wide)) {
        r = run_ggdiff(small_request({"-m", fixture_path(), "--control-net", wide,
                                      "--control-image", control_image_path()},
                                     {}, out),
                       dir_);
        EXPECT_TRUE(r.failed_cleanly()) << r.describe();
        EXPECT_TRUE(contains(r.err, "made for another model")) << r.err;
    }
    EXPECT_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace ggdiff::e2e
