// The C API's calls for front ends that keep images in memory (the HTTP server): encoding to
// PNG/JPEG/WebP bytes with the parameters text, decoding uploads with a pixel limit, image
// options from memory, option copies, model info, sampler/scheduler names and parameters as
// JSON.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ggdiff.h"

namespace {

const std::string kFixture = GGDIFF_BINARY_DIR "/fixtures/sd1_mc32.safetensors";
const std::string kMerges = GGDIFF_SHARED_DIR "/data/clip/merges.txt";

std::vector<unsigned char> gradient(int w, int h, int channels) {
    std::vector<unsigned char> px(static_cast<size_t>(w) * h * channels);
    for (size_t i = 0; i < px.size(); ++i) px[i] = static_cast<unsigned char>((i * 7) % 251);
    return px;
}

struct Bytes {
    unsigned char* data = nullptr;
    size_t size = 0;
    ~Bytes() { std::free(data); }
};

nlohmann::json take_json(char* text) {
    nlohmann::json j = nlohmann::json::parse(text ? text : "null");
    std::free(text);
    return j;
}

TEST(CApiMemory, EncodeDecodeRoundTripKeepsPixelsAndParameters) {
    std::vector<unsigned char> px = gradient(24, 16, 3);
    char params[] = "a cat\nSteps: 4, Sampler: Euler, CFG scale: 7, Seed: 3, Size: 24x16";
    ggdiff_image img{24, 16, 3, px.data(), 3, params};
    for (const char* format : {"png", "webp"}) {
        SCOPED_TRACE(format);
        Bytes b;
        ASSERT_EQ(ggdiff_image_encode(&img, format, 100, &b.data, &b.size), 0)
            << ggdiff_last_error();
        ggdiff_image* back = nullptr;
        ASSERT_EQ(ggdiff_image_decode(b.data, b.size, 0, &back), 0) << ggdiff_last_error();
        EXPECT_EQ(back->width, 24);
        EXPECT_EQ(back->height, 16);
        ASSERT_EQ(back->channels, 3);
        // PNG and WebP at quality 100 are lossless.
        EXPECT_EQ(std::memcmp(back->data, px.data(), px.size()), 0);
        ASSERT_NE(back->parameters, nullptr);
        EXPECT_STREQ(back->parameters, params);
        ggdiff_images_free(back, 1);
    }
    Bytes jpeg;
    ASSERT_EQ(ggdiff_image_encode(&img, "jpg", 80, &jpeg.data, &jpeg.size), 0);
    EXPECT_EQ(jpeg.data[0], 0xFF);
    EXPECT_EQ(jpeg.data[1], 0xD8);
    // Without parameters nothing is embedded.
    img.parameters = nullptr;
    Bytes plain;
    ASSERT_EQ(ggdiff_image_encode(&img, "png", 90, &plain.data, &plain.size), 0);
    ggdiff_image* back = nullptr;
    ASSERT_EQ(ggdiff_image_decode(plain.data, plain.size, 0, &back), 0);
    EXPECT_EQ(back->parameters, nullptr);
    ggdiff_images_free(back, 1);
}

TEST(CApiMemory, EncodeAndDecodeErrors) {
    std::vector<unsigned char> px = gradient(8, 8, 3);
    ggdiff_image img{8, 8, 3, px.data(), 0, nullptr};
    Bytes b;
    EXPECT_NE(ggdiff_image_encode(&img, "gif", 90, &b.data, &b.size), 0);
    EXPECT_NE(std::string(ggdiff_last_error()).find("gif"), std::string::npos);
    EXPECT_NE(ggdiff_image_encode(&img, "png", 0, &b.data, &b.size), 0);
    img.channels = 7;
    EXPECT_NE(ggdiff_image_encode(&img, "png", 90, &b.data, &b.size), 0);

    ggdiff_image* out = nullptr;
    const char text[] = "GIF89a not really";
    EXPECT_NE(ggdiff_image_decode(text, sizeof text, 0, &out), 0);
    EXPECT_EQ(out, nullptr);
    // The pixel limit is checked from the header.
    img.channels = 3;
    ASSERT_EQ(ggdiff_image_encode(&img, "png", 90, &b.data, &b.size), 0);
    EXPECT_NE(ggdiff_image_decode(b.data, b.size, 63, &out), 0);
    EXPECT_NE(std::string(ggdiff_last_error()).find("exceeds the limit of 63 pixels"),
              std::string::npos)
        << ggdiff_last_error();
    EXPECT_EQ(ggdiff_image_decode(b.data, b.size, 64, &out), 0);
    ggdiff_images_free(out, 1);
    // Cut short: an error, not a crash.
    EXPECT_NE(ggdiff_image_decode(b.data, 20, 0, &out), 0);
}

TEST(CApiMemory, SamplerAndSchedulerNamesAndParametersJson) {
    EXPECT_STREQ(ggdiff_sampler_name("DPM++ 2M SDE"), "dpm++2m_sde");
    EXPECT_STREQ(ggdiff_sampler_name("k_dpmpp_2m_sde"), "dpm++2m_sde");
    EXPECT_STREQ(ggdiff_sampler_name("Euler a"), "euler_a");
    EXPECT_EQ(ggdiff_sampler_name("warp drive"), nullptr);
    EXPECT_NE(std::string(ggdiff_last_error()).find("warp drive"), std::string::npos);
    EXPECT_STREQ(ggdiff_scheduler_name("Karras"), "karras");
    EXPECT_STREQ(ggdiff_scheduler_name("Align Your Steps"), "ays");
    EXPECT_EQ(ggdiff_scheduler_name("nope"), nullptr);

    char* text = nullptr;
    ASSERT_EQ(ggdiff_list_samplers(&text), 0);
    nlohmann::json samplers = take_json(text);
    ASSERT_EQ(samplers.size(), 18u);
    EXPECT_EQ(samplers[0]["name"], "euler");
    EXPECT_EQ(samplers[7]["a1111"], "DPM++ 2M SDE");
    EXPECT_NE(samplers[7]["aliases"].dump().find("k_dpmpp_2m_sde"), std::string::npos);
    text = nullptr;
    ASSERT_EQ(ggdiff_list_schedulers(&text), 0);
    nlohmann::json schedulers = take_json(text);
    ASSERT_EQ(schedulers.size(), 12u);  // flux, flux2 and logit_normal come last
    EXPECT_EQ(schedulers[0]["name"], "discrete");
    EXPECT_NE(schedulers.dump().find("\"flux\""), std::string::npos);
    EXPECT_NE(schedulers.dump().find("\"flux2\""), std::string::npos);

    text = nullptr;
    ASSERT_EQ(ggdiff_parameters_to_json(
                  "a cat\nNegative prompt: fog\nSteps: 4, Sampler: Euler, Schedule type: Karras, "
                  "CFG scale: 7, Seed: 3, Size: 64x48, Clip skip: 2",
                  &text),
              0);
    nlohmann::json p = take_json(text);
    EXPECT_EQ(p["prompt"], "a cat");
    EXPECT_EQ(p["negative_prompt"], "fog");
    EXPECT_EQ(p["seed"], 3);
    EXPECT_EQ(p["height"], 48);
    EXPECT_EQ(p["clip_skip"], 2);
    EXPECT_EQ(p["extra_generation_params"]["Schedule type"], "Karras");
    EXPECT_NE(ggdiff_parameters_to_json("x\nSteps: many, Sampler: Euler, Seed: 1", &text), 0);
}

TEST(CApiMemory, CloneAndImageOptionsAndModelInfo) {
    ggdiff_options* o = ggdiff_options_new();
    ASSERT_EQ(ggdiff_options_set(o, "model", kFixture.c_str()), 0);
    ASSERT_EQ(ggdiff_options_set(o, "tokenizer", kMerges.c_str()), 0);
    ggdiff_model* model = nullptr;
    ASSERT_EQ(ggdiff_model_load(o, &model), 0) << ggdiff_last_error();
    char* text = nullptr;
    ASSERT_EQ(ggdiff_loaded_model_info(model, &text), 0);
    nlohmann::json info = take_json(text);
    EXPECT_EQ(info["name"], "sd1_mc32");
    EXPECT_EQ(info["family"], "SD1");
    EXPECT_EQ(info["files"]["model"], kFixture);
    EXPECT_TRUE(info["vae"].is_null());

    // A clone is independent of the original.
    ggdiff_options* a = ggdiff_options_clone(o);
    ASSERT_NE(a, nullptr);
    for (auto [k, v] : {std::pair{"prompt", "a red cube"},
                        {"width", "64"},
                        {"height", "64"},
                        {"steps", "4"},
                        {"sampling-method", "euler"},
                        {"seed", "5"}}) {
        ASSERT_EQ(ggdiff_options_set(a, k, v), 0);
    }
    ggdiff_options* b = ggdiff_options_clone(a);
    ggdiff_image* t2i = nullptr;
    int n = 0;
    ASSERT_EQ(ggdiff_generate(model, a, nullptr, nullptr, &t2i, &n), 0) << ggdiff_last_error();
    ASSERT_EQ(n, 1);

    // img2img from pixels in memory: "init-img" takes an image, names that are no image
    // are refused.
    ASSERT_EQ(ggdiff_options_set_image(b, "init-img", &t2i[0]), 0) << ggdiff_last_error();
    ASSERT_EQ(ggdiff_options_set(b, "strength", "0.5"), 0);
    EXPECT_NE(ggdiff_options_set_image(b, "steps", &t2i[0]), 0);
    EXPECT_NE(std::string(ggdiff_last_error()).find("not an image"), std::string::npos)
        << ggdiff_last_error();
    ggdiff_image* i2i = nullptr;
    ASSERT_EQ(ggdiff_generate(model, b, nullptr, nullptr, &i2i, &n), 0) << ggdiff_last_error();
    ASSERT_EQ(n, 1);
    EXPECT_NE(std::string(i2i[0].parameters).find("Denoising strength: 0.5"), std::string::npos)
        << i2i[0].parameters;
    EXPECT_NE(std::memcmp(i2i[0].data, t2i[0].data, 64 * 64 * 3), 0);
    // Inpainting from memory: a mask whose left half repaints changes the img2img image.
    std::vector<unsigned char> half(64 * 64 * 3);
    for (int y = 0; y < 64; ++y)
        for (int x = 0; x < 64; ++x)
            for (int ch = 0; ch < 3; ++ch) half[(y * 64 + x) * 3 + ch] = x < 32 ? 255 : 0;
    ggdiff_image mask{64, 64, 3, half.data(), 0, nullptr};
    ASSERT_EQ(ggdiff_options_set_image(b, "mask", &mask), 0) << ggdiff_last_error();
    ggdiff_image* masked = nullptr;
    ASSERT_EQ(ggdiff_generate(model, b, nullptr, nullptr, &masked, &n), 0) << ggdiff_last_error();
    EXPECT_NE(std::memcmp(masked[0].data, i2i[0].data, 64 * 64 * 3), 0);
    EXPECT_NE(std::string(masked[0].parameters).find("Denoising strength: 0.5"), std::string::npos);
    ggdiff_images_free(masked, 1);
    ASSERT_EQ(ggdiff_options_set_image(b, "mask", nullptr), 0);
    // Clearing the image makes it text-to-image again: the same image as before.
    ASSERT_EQ(ggdiff_options_set_image(b, "init-img", nullptr), 0);
    ggdiff_image* again = nullptr;
    ASSERT_EQ(ggdiff_generate(model, b, nullptr, nullptr, &again, &n), 0);
    EXPECT_EQ(std::memcmp(again[0].data, t2i[0].data, 64 * 64 * 3), 0);

    ggdiff_images_free(again, 1);
    ggdiff_images_free(i2i, 1);
    ggdiff_images_free(t2i, 1);
    ggdiff_options_free(b);
    ggdiff_options_free(a);
    ggdiff_model_free(model);
    ggdiff_options_free(o);
}

}  // namespace

namespace {

TEST(CApiMemory, DefaultModelIsFoundOrItsAbsenceExplained) {
    const char* old = std::getenv("GGDIFF_DEFAULT_MODEL");
    const std::string saved = old ? old : "";
    setenv("GGDIFF_DEFAULT_MODEL", "/nonexistent/toy.safetensors", 1);
    EXPECT_EQ(ggdiff_default_model(), nullptr);
    EXPECT_NE(std::string(ggdiff_last_error()).find("/nonexistent/toy.safetensors"),
              std::string::npos)
        << ggdiff_last_error();
    setenv("GGDIFF_DEFAULT_MODEL", kFixture.c_str(), 1);
    const char* path = ggdiff_default_model();
    ASSERT_NE(path, nullptr) << ggdiff_last_error();
    EXPECT_EQ(std::string(path), kFixture);
    if (old) {
        setenv("GGDIFF_DEFAULT_MODEL", saved.c_str(), 1);
    } else {
        unsetenv("GGDIFF_DEFAULT_MODEL");
    }
}

}  // namespace
