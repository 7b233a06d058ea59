// LoRA through the C API on the SD1 fixture, one model for many generations: each
// generation carries exactly the LoRAs its prompt names (merged ones are taken off again),
// at_runtime gives the images merging gives, and the metadata keeps the tags and hashes.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ggdiff.h"
#include "image/image_io.h"

namespace {

const std::string kFixture = GGDIFF_BINARY_DIR "/fixtures/sd1_mc32.safetensors";
const std::string kLoras = GGDIFF_BINARY_DIR "/fixtures/sd1_lora_loras";
const std::string kGolden = GGDIFF_SHARED_DIR "/golden/";

struct Options {
    ggdiff_options* o = ggdiff_options_new();
    ~Options() { ggdiff_options_free(o); }
    void set(const char* k, const std::string& v) {
        EXPECT_EQ(ggdiff_options_set(o, k, v.c_str()), 0) << k << ": " << ggdiff_last_error();
    }
};

struct Model {
    ggdiff_model* m = nullptr;
    explicit Model(const std::string& mode) {
        Options opts;
        opts.set("model", kFixture);
        opts.set("lora-model-dir", kLoras);
        opts.set("lora-apply-mode", mode);
        EXPECT_EQ(ggdiff_model_load(opts.o, &m), 0) << ggdiff_last_error();
    }
    ~Model() { ggdiff_model_free(m); }
};

struct Generated {
    std::vector<unsigned char> rgb;
    std::string parameters;
};

// A 64x64 euler image (cfg 7) of `prompt`.
Generated generate(Model& model, const std::string& prompt, int steps, int seed) {
    Options gen;
    gen.set("prompt", prompt);
    gen.set("width", "64");
    gen.set("height", "64");
    gen.set("steps", std::to_string(steps));
    gen.set("sampling-method", "euler");
    gen.set("cfg-scale", "7");
    gen.set("seed", std::to_string(seed));
    ggdiff_image* images = nullptr;
    int n = 0;
    Generated g;
    if (ggdiff_generate(model.m, gen.o, nullptr, nullptr, &images, &n) != 0) {
        ADD_FAILURE() << prompt << ": " << ggdiff_last_error();
        return g;
    }
    EXPECT_EQ(n, 1);
    if (n >= 1) {
        const ggdiff_image& im = images[0];
        for (int i = 0; i < im.width * im.height; ++i) {
            for (int c = 0; c < 3; ++c) g.rgb.push_back(im.data[i * im.channels + c]);
        }
        g.parameters = im.parameters ? im.parameters : "";
    }
    ggdiff_images_free(images, n);
    return g;
}

double mean_abs(const std::vector<unsigned char>& a, const std::vector<unsigned char>& b) {
    if (a.size() != b.size() || a.empty()) return 1e9;
    double s = 0;
    for (size_t i = 0; i < a.size(); ++i) s += std::abs(int(a[i]) - int(b[i]));
    return s / static_cast<double>(a.size());
}

std::vector<unsigned char> golden(const std::string& rel) {
    auto img = ggdiff::read_image(kGolden + rel);
    EXPECT_TRUE(img.ok()) << rel;
    std::vector<unsigned char> rgb;
    if (!img.ok()) return rgb;
    for (int i = 0; i < img->width * img->height; ++i) {
        for (int c = 0; c < 3; ++c) rgb.push_back(img->pixels[i * img->channels + c]);
    }
    return rgb;
}

const char* kAstronaut = "a photograph of an astronaut riding a horse";

TEST(LoraApi, SuccessiveGenerationsEachCarryTheirOwnLoras) {
    Model model("immediately");
    ASSERT_NE(model.m, nullptr);
    const double tol = 1.5;

    Generated kohya = generate(model, std::string(kAstronaut) + "<lora:kohya:1>", 4, 42);
    EXPECT_LE(mean_abs(kohya.rgb, golden("sd1_lora/lora_kohya.png")), tol);
    EXPECT_NE(kohya.parameters.find("<lora:kohya:1>"), std::string::npos) << kohya.parameters;
    EXPECT_NE(kohya.parameters.find("Lora hashes: \"kohya: 3468926b8459\""), std::string::npos)
        << kohya.parameters;

    // No tags: the merged LoRA is gone.
    Generated plain = generate(model, kAstronaut, 4, 42);
    EXPECT_LE(mean_abs(plain.rgb, golden("sd1_mc32/euler.png")), tol);
    EXPECT_EQ(plain.parameters.find("Lora hashes"), std::string::npos) << plain.parameters;

    // Another weight of the same LoRA, then two LoRAs at once (the same name twice adds).
    Generated half = generate(model, std::string(kAstronaut) + "<lora:kohya:0.5>", 4, 42);
    EXPECT_LE(mean_abs(half.rgb, golden("sd1_lora/lora_kohya_half.png")), tol);
    Generated two =
        generate(model, "two cats sleeping<lora:kohya:0.5><lora:locon:1><lora:kohya:0.3>", 5, 100);
    EXPECT_LE(mean_abs(two.rgb, golden("sd1_lora/lora_two.png")), tol);
    EXPECT_NE(two.parameters.find("kohya: 3468926b8459, locon: d9107a7d0447"), std::string::npos)
        << two.parameters;
}

TEST(LoraApi, AtRuntimeGivesTheMergedImages) {
    std::vector<Generated> merged, runtime;
    const std::vector<std::string> prompts = {
        std::string(kAstronaut) + "<lora:peft:1>",
        std::string(kAstronaut) + "<lora:te:1>",
        "two cats sleeping<lora:kohya:0.8><lora:locon:1>",
    };
    {
        Model model("immediately");
        ASSERT_NE(model.m, nullptr);
        for (const std::string& p : prompts) merged.push_back(generate(model, p, 4, 42));
    }
    {
        Model model("at_runtime");
        ASSERT_NE(model.m, nullptr);
        for (const std::string& p : prompts) runtime.push_back(generate(model, p, 4, 42));
    }
    const std::vector<unsigned char> plain = golden("sd1_mc32/euler.png");
    for (size_t i = 0; i < prompts.size(); ++i) {
        EXPECT_LE(mean_abs(merged[i].rgb, runtime[i].rgb), 0.6) << prompts[i];
        if (i < 2) {
            EXPECT_GT(mean_abs(merged[i].rgb, plain), 5.0) << prompts[i] << " did nothing";
        }
    }
}

}  // namespace
