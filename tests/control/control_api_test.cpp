// ControlNet through the C API, the way front ends use it: the model and its ControlNet
// loaded once, then every sampler with a control image (each run applies the ControlNet
// in the conditional and the unconditional pass of every model evaluation), and image
// options that are read when they are set.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "control_support.h"
#include "ggdiff.h"

namespace ggdiff::e2e {
namespace {

struct Options {
    ggdiff_options* o = ggdiff_options_new();
    ~Options() { ggdiff_options_free(o); }
    int set(const char* k, const std::string& v) { return ggdiff_options_set(o, k, v.c_str()); }
};

// The first image of a generation (empty on failure, with the error recorded).
std::vector<unsigned char> generate(ggdiff_model* model, const Options& gen) {
    ggdiff_image* images = nullptr;
    int n = 0;
    if (ggdiff_generate(model, gen.o, nullptr, nullptr, &images, &n) != 0) {
        ADD_FAILURE() << ggdiff_last_error();
        return {};
    }
    std::vector<unsigned char> px;
    if (n >= 1) {
        px.assign(images[0].data,
                  images[0].data + images[0].width * images[0].height * images[0].channels);
    }
    ggdiff_images_free(images, n);
    return px;
}

double mean_diff(const std::vector<unsigned char>& a, const std::vector<unsigned char>& b) {
    if (a.size() != b.size() || a.empty()) return -1;
    double s = 0;
    for (size_t i = 0; i < a.size(); ++i) s += std::abs(int(a[i]) - int(b[i]));
    return s / a.size();
}

// The fixture with its ControlNet loaded through the C API (nullptr and a failure if not).
ggdiff_model* load_with_control() {
    if (!prerequisites_ok()) return nullptr;
    EXPECT_TRUE(fs::is_regular_file(control_net_path())) << control_net_path();
    Options load;
    EXPECT_EQ(load.set("model", fixture_path()), 0);
    EXPECT_EQ(load.set("control-net", control_net_path()), 0);
    ggdiff_model* model = nullptr;
    EXPECT_EQ(ggdiff_model_load(load.o, &model), 0) << ggdiff_last_error();
    return model;
}

void small(Options& gen) {
    gen.set("prompt", "a photograph of an astronaut riding a horse");
    gen.set("width", "64");
    gen.set("height", "64");
    gen.set("steps", "2");
    gen.set("seed", "42");
    gen.set("control-strength", "1");
}

TEST(ControlApi, ControlImageSteersTextAndImageToImage) {
    ggdiff_model* model = load_with_control();
    ASSERT_NE(model, nullptr);
    Options gen;
    small(gen);
    gen.set("sampling-method", "euler");
    // Without a control image the ControlNet is not used.
    const std::vector<unsigned char> plain = generate(model, gen);
    ASSERT_EQ(gen.set("control-image", control_image_path()), 0) << ggdiff_last_error();
    const std::vector<unsigned char> controlled = generate(model, gen);
    EXPECT_GT(mean_diff(plain, controlled), 1.0);

    // img2img with control, then the control image cleared.
    gen.set("steps", "8");
    gen.set("strength", "0.9");
    ASSERT_EQ(gen.set("init-img", init_image_path()), 0);
    const std::vector<unsigned char> i2i_control = generate(model, gen);
    ASSERT_EQ(gen.set("control-image", ""), 0);
    const std::vector<unsigned char> i2i = generate(model, gen);
    EXPECT_GT(mean_diff(i2i, i2i_control), 0.2);
    ggdiff_model_free(model);
}

// Every sampler with a control image (each model evaluation runs the ControlNet in the
// conditional and the unconditional pass), in three groups to keep each test short.
class ControlSamplers : public ::testing::TestWithParam<std::vector<const char*>> {};

TEST_P(ControlSamplers, Run) {
    ggdiff_model* model = load_with_control();
    ASSERT_NE(model, nullptr);
    Options gen;
    small(gen);
    ASSERT_EQ(gen.set("control-image", control_image_path()), 0) << ggdiff_last_error();
    for (const char* sampler : GetParam()) {
        SCOPED_TRACE(sampler);
        ASSERT_EQ(gen.set("sampling-method", sampler), 0);
        const std::vector<unsigned char> px = generate(model, gen);
        ASSERT_EQ(px.size(), 64u * 64u * 3u);
        EXPECT_FALSE(std::all_of(px.begin(), px.end(), [&](unsigned char v) { return v == px[0]; }))
            << "a flat image";
    }
    ggdiff_model_free(model);
}

INSTANTIATE_TEST_SUITE_P(
    All, ControlSamplers,
    ::testing::Values(std::vector<const char*>{"euler", "euler_a", "heun", "dpm2", "dpm++2s_a",
                                               "dpm++2m"},
                      std::vector<const char*>{"dpm++2mv2", "dpm++2m_sde", "ipndm", "ipndm_v",
                                               "lcm", "ddim_trailing"},
                      std::vector<const char*>{"tcd", "res_multistep", "res_2s", "er_sde",
                                               "euler_cfg_pp", "euler_a_cfg_pp"}));

TEST(ControlApi, ImageOptionsAreReadWhenSet) {
    Options o;
    EXPECT_NE(o.set("mask", "/nonexistent/mask.png"), 0);
    EXPECT_NE(std::string(ggdiff_last_error()).find("mask"), std::string::npos)
        << ggdiff_last_error();
    EXPECT_NE(o.set("control-image", std::string(GGDIFF_SOURCE_DIR) + "/README.md"), 0);
    EXPECT_NE(std::string(ggdiff_last_error()).find("control-image"), std::string::npos)
        << ggdiff_last_error();
    EXPECT_EQ(o.set("mask", center_mask_path()), 0) << ggdiff_last_error();
    EXPECT_EQ(o.set("control-strength", "0.5"), 0);
    EXPECT_NE(o.set("control-strength", "strong"), 0);
    EXPECT_EQ(o.set("canny", "true"), 0);
    EXPECT_EQ(o.set("control-net-cpu", ""), 0);
}

TEST(ControlApi, MaskWithoutInitImageIsRefused) {
    ASSERT_TRUE(prerequisites_ok());
    Options load;
    load.set("model", fixture_path());
    ggdiff_model* model = nullptr;
    ASSERT_EQ(ggdiff_model_load(load.o, &model), 0) << ggdiff_last_error();
    Options gen;
    gen.set("width", "64");
    gen.set("height", "64");
    gen.set("steps", "1");
    ASSERT_EQ(gen.set("mask", center_mask_path()), 0);
    ggdiff_image* images = nullptr;
    int n = 0;
    EXPECT_NE(ggdiff_generate(model, gen.o, nullptr, nullptr, &images, &n), 0);
    EXPECT_NE(std::string(ggdiff_last_error()).find("--mask needs an init image"),
              std::string::npos)
        << ggdiff_last_error();
    // A control image without a ControlNet.
    ASSERT_EQ(gen.set("mask", ""), 0);
    ASSERT_EQ(gen.set("control-image", control_image_path()), 0);
    EXPECT_NE(ggdiff_generate(model, gen.o, nullptr, nullptr, &images, &n), 0);
    EXPECT_NE(std::string(ggdiff_last_error()).find("--control-net"), std::string::npos)
        << ggdiff_last_error();
    ggdiff_model_free(model);
}

}  // namespace
}  // namespace ggdiff::e2e
