// FLUX.1 through the CLI: files as users have them (one ComfyUI-style checkpoint, a diffusers
// folder, a GGUF-quantized DiT, --type conversion) give the golden image of the flux_tiny
// suite, and bad input (missing or wrong tokenizer, mismatched or mis-shaped parts, a
// missing VAE) fails cleanly with a message that names the problem.
#include <gtest/gtest.h>

#include "../golden/flux_e2e.h"

namespace {

namespace fs = std::filesystem;
namespace e2e = ggdiff::e2e;
namespace flux = ggdiff::e2e::flux;
using e2e::contains;
using e2e::RunResult;

std::string layouts_tool() {
    return std::string(GGDIFF_SOURCE_DIR) + "/tests/tools/flux_layouts.py";
}

bool run_python(const std::vector<std::string>& args) {
    std::string cmd = "/usr/bin/python3 '" + layouts_tool() + "'";
    for (const std::string& a : args) cmd += " '" + a + "'";
    return std::system(cmd.c_str()) == 0;
}

class FluxFiles : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_TRUE(flux::prerequisites_ok());
        dir_ = e2e::fresh_dir();
    }

    // ggdiff with `model` (the files to load), the golden case `euler` and -o OUT.
    RunResult generate(const std::vector<std::string>& model, const std::string& out) {
        std::vector<std::string> args = model;
        for (const std::string& a : flux::case_args("flux_euler")) args.push_back(a);
        args.insert(args.end(), {"-o", out});
        return e2e::run_ggdiff(args, dir_, 300);
    }

    void expect_golden(const std::vector<std::string>& model) {
        const std::string out = dir_ + "/out.png";
        RunResult r = generate(model, out);
        ASSERT_TRUE(r.succeeded()) << r.describe();
        const e2e::ImageDiff d = e2e::compare_images(out, flux::golden("flux_euler.png"));
        ASSERT_TRUE(d.ok) << d.error;
        std::printf("mean_abs_diff %.3f max_abs_diff %d\n", d.mean_abs, d.max_abs);
        EXPECT_LE(d.mean_abs, flux::tolerance()) << "max " << d.max_abs << "\n" << r.describe();
    }

    // A run expected to fail: exits non-zero, no crash, and says each of `words`.
    void expect_error(const std::vector<std::string>& args, const std::vector<std::string>& words) {
        std::vector<std::string> full = args;
        for (const std::string& a : flux::case_args("flux_euler")) full.push_back(a);
        full.insert(full.end(), {"-o", dir_ + "/never.png"});
        RunResult r = e2e::run_ggdiff(full, dir_, 120);
        EXPECT_TRUE(r.failed_cleanly()) << r.describe();
        for (const std::string& w : words)
            EXPECT_TRUE(contains(r.err, w)) << w << "\n" << r.describe();
        EXPECT_FALSE(fs::exists(dir_ + "/never.png"));
    }

    // The flux_tiny files with the one at `flag` replaced by `file` (or dropped when empty).
    static std::vector<std::string> model_with(const std::string& flag, const std::string& file) {
        std::vector<std::string> args = flux::model_args(), out;
        for (size_t i = 0; i + 1 < args.size(); i += 2) {
            if (args[i] != flag) {
                out.insert(out.end(), {args[i], args[i + 1]});
            } else if (!file.empty()) {
                out.insert(out.end(), {flag, file});
            }
        }
        return out;
    }

    std::string dir_;
};

TEST_F(FluxFiles, SingleFileCheckpoint) {
    const std::string file = dir_ + "/flux_all_in_one.safetensors";
    ASSERT_TRUE(run_python({"single", file, flux::dit(), flux::clip_l(), flux::t5(), flux::vae(),
                            e2e::merges_path(), flux::t5_tokenizer()}));
    expect_golden(
        {"-m", file, "--tokenizer", e2e::merges_path(), "--t5xxl-tokenizer", flux::t5_tokenizer()});
}

// transformer/ in diffusers names (q/k/v apart, final modulation (scale, shift)), the
// diffusers VAE, and both tokenizers found in the folder.
TEST_F(FluxFiles, DiffusersFolder) {
    const std::string folder = dir_ + "/FLUX.1-tiny";
    ASSERT_TRUE(run_python({"diffusers", folder, flux::dit(), flux::clip_l(), flux::t5(),
                            flux::vae(), e2e::merges_path(), flux::t5_tokenizer()}));
    expect_golden({"-m", folder});
}

// The four files converted to one q8_0 GGUF (weights used in place) and the same conversion
// on load (--type q8_0) give one image, close to the f16 golden.
TEST_F(FluxFiles, QuantizedGgufAndTypeConversion) {
    const std::string gguf = dir_ + "/flux_tiny_q8_0.gguf";
    std::vector<std::string> convert = {"-M", "convert"};
    for (const std::string& a : flux::model_args()) convert.push_back(a);
    convert.insert(convert.end(), {"--type", "q8_0", "-o", gguf});
    RunResult c = e2e::run_ggdiff(convert, dir_);
    ASSERT_TRUE(c.succeeded()) << c.describe();

    const std::string a = dir_ + "/gguf.png", b = dir_ + "/type.png";
    RunResult r1 = generate(
        {"-m", gguf, "--tokenizer", e2e::merges_path(), "--t5xxl-tokenizer", flux::t5_tokenizer()},
        a);
    ASSERT_TRUE(r1.succeeded()) << r1.describe();
    std::vector<std::string> typed = flux::model_args();
    typed.insert(typed.end(), {"--type", "q8_0"});
    RunResult r2 = generate(typed, b);
    ASSERT_TRUE(r2.succeeded()) << r2.describe();

    const e2e::ImageDiff same = e2e::compare_images(a, b);
    ASSERT_TRUE(same.ok) << same.error;
    EXPECT_LE(same.mean_abs, 0.05) << "GGUF q8_0 and --type q8_0 differ, max " << same.max_abs;
    const e2e::ImageDiff g = e2e::compare_images(a, flux::golden("flux_euler.png"));
    ASSERT_TRUE(g.ok) << g.error;
    std::printf("q8_0 against the f16 golden: mean_abs_diff %.3f max_abs_diff %d\n", g.mean_abs,
                g.max_abs);
    EXPECT_LE(g.mean_abs, 6.0) << "max " << g.max_abs;
}

// img2img from the golden image at a size that is no multiple of 16 (the DiT pads to its
// patches and crops), with real CFG (--cfg-scale > 1 and a negative prompt): the image has
// the requested size, and its metadata the request's settings with FLUX's distilled guidance.
TEST_F(FluxFiles, Img2ImgWithRealCfgAtAnOddSize) {
    std::vector<std::string> args = flux::model_args();
    args.insert(args.end(), {"-p",          "a red cube on a wooden table",
                             "-n",          "blurry",
                             "-W",          "72",
                             "-H",          "88",
                             "--steps",     "4",
                             "--cfg-scale", "2.5",
                             "-s",          "3",
                             "-i",          flux::golden("flux_euler.png"),
                             "--strength",  "0.6",
                             "-o",          dir_ + "/i2i.png"});
    RunResult r = e2e::run_ggdiff(args, dir_, 300);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    auto img = ggdiff::read_image(dir_ + "/i2i.png");
    ASSERT_TRUE(img.ok()) << img.status().message();
    EXPECT_EQ(img->width, 72);
    EXPECT_EQ(img->height, 88);
    auto text = ggdiff::read_image_parameters(dir_ + "/i2i.png");
    ASSERT_TRUE(text.ok());
    auto info = ggdiff::parse_infotext(*text);
    ASSERT_TRUE(info.ok()) << *text;
    EXPECT_EQ(info->negative_prompt, "blurry");
    EXPECT_FLOAT_EQ(info->cfg_scale, 2.5f);
    ASSERT_TRUE(info->guidance.has_value()) << *text;
    EXPECT_FLOAT_EQ(*info->guidance, 3.5f);
    ASSERT_TRUE(info->denoising_strength.has_value()) << *text;
    EXPECT_FLOAT_EQ(*info->denoising_strength, 0.6f);
}

// A schnell layout (the dev DiT without guidance_in) runs as FLUX.1-schnell: --guidance has
// no input to feed (two values give the same image, and the metadata carries none), and the
// missing guidance vector changes the image against dev's golden.
TEST_F(FluxFiles, SchnellHasNoGuidanceInput) {
    const std::string schnell = dir_ + "/schnell.safetensors";
    ASSERT_TRUE(run_python({"drop", schnell, flux::dit(), "guidance_in."}));
    const std::vector<std::string> model = model_with("--diffusion-model", schnell);
    const std::string a = dir_ + "/g35.png", b = dir_ + "/g5.png";
    std::vector<std::string> args_a = model, args_b = model;
    args_a.insert(args_a.end(), {"-v"});
    args_b.insert(args_b.end(), {"--guidance", "5"});
    RunResult r1 = generate(args_a, a);
    ASSERT_TRUE(r1.succeeded()) << r1.describe();
    EXPECT_TRUE(contains(r1.out + r1.err, "FLUX.1-schnell")) << r1.describe();
    RunResult r2 = generate(args_b, b);
    ASSERT_TRUE(r2.succeeded()) << r2.describe();

    const e2e::ImageDiff same = e2e::compare_images(a, b);
    ASSERT_TRUE(same.ok) << same.error;
    EXPECT_EQ(same.max_abs, 0) << "--guidance changed a schnell image";
    const e2e::ImageDiff dev = e2e::compare_images(a, flux::golden("flux_euler.png"));
    ASSERT_TRUE(dev.ok) << dev.error;
    std::printf("schnell against the dev golden: mean_abs_diff %.3f\n", dev.mean_abs);
    EXPECT_GT(dev.mean_abs, 1.0) << "the schnell layout gave dev's image";

    auto text = ggdiff::read_image_parameters(b);
    ASSERT_TRUE(text.ok());
    auto info = ggdiff::parse_infotext(*text);
    ASSERT_TRUE(info.ok()) << *text;
    EXPECT_FALSE(info->guidance.has_value()) << *text;
}

// FLUX prompts have the CLIP window limit too (T5 would otherwise encode one chunk per 255
// tokens without end): refused before anything is sampled.
TEST_F(FluxFiles, PromptOverTheWindowLimitIsRefused) {
    std::string prompt;
    for (int i = 0; i < 40; ++i) prompt += "a cat BREAK ";
    std::vector<std::string> args = flux::model_args();
    args.insert(args.end(),
                {"-p", prompt, "-W", "64", "-H", "64", "--steps", "1", "-o", dir_ + "/never.png"});
    RunResult r = e2e::run_ggdiff(args, dir_, 120);
    EXPECT_TRUE(r.failed_cleanly()) << r.describe();
    EXPECT_TRUE(contains(r.err, "the prompt is too long: 80 tokens in 40 windows")) << r.err;
    EXPECT_FALSE(contains(r.err, "sampling")) << r.err;
    EXPECT_FALSE(fs::exists(dir_ + "/never.png"));
}

TEST_F(FluxFiles, MissingT5TokenizerIsNamed) {
    expect_error(model_with("--t5xxl-tokenizer", ""),
                 {"no T5 tokenizer found", "--t5xxl-tokenizer", "looked for"});
}

TEST_F(FluxFiles, BadT5TokenizerPathsAreNamed) {
    expect_error(model_with("--t5xxl-tokenizer", dir_ + "/nowhere.json"),
                 {"--t5xxl-tokenizer", "nowhere.json", "no such file"});
    expect_error(model_with("--t5xxl-tokenizer", e2e::merges_path()),
                 {"T5 tokenizer", "merges.txt", "not a tokenizer.json"});
    expect_error(model_with("--t5xxl-tokenizer", dir_),
                 {"--t5xxl-tokenizer", "holds no tokenizer.json"});
}

TEST_F(FluxFiles, WrongPartsAreNamed) {
    // CLIP-L given as the T5 encoder.
    expect_error(model_with("--t5xxl", flux::clip_l()),
                 {"--t5xxl", "T5: missing tensor text_encoders.t5xxl.shared.weight"});
    // An SD VAE (4 latent channels).
    expect_error(model_with("--vae", e2e::fixture_path()), {"4 latent channels", "16"});
    // No VAE at all.
    expect_error(model_with("--vae", ""), {"FLUX needs", "--vae"});
}

TEST_F(FluxFiles, MisShapedDitTensorsAreNamed) {
    // txt_in taking a 32-wide context: the T5 (64 wide) does not fit it.
    const std::string narrow = dir_ + "/narrow_txt_in.safetensors";
    ASSERT_TRUE(run_python({"reshape", narrow, flux::dit(), "txt_in.weight", "256,32"}));
    expect_error(model_with("--diffusion-model", narrow), {"T5", "64", "txt_in takes 32"});
    // One block's projection of the wrong size.
    const std::string broken = dir_ + "/broken_linear2.safetensors";
    ASSERT_TRUE(
        run_python({"reshape", broken, flux::dit(), "single_blocks.1.linear2.weight", "256,1000"}));
    expect_error(model_with("--diffusion-model", broken),
                 {"model.diffusion_model.single_blocks.1.linear2.weight"});
}

}  // namespace
