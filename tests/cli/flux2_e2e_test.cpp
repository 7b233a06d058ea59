// FLUX.2 klein through the CLI, files as users have them: the three part files (each converted
// to GGUF, or to q8_0 on load) and a diffusers Flux2KleinPipeline folder give the golden image of
// the flux2_tiny suite; -M info names the family; reference images: several of them, their
// automatic resize (and --disable-auto-resize-ref-image), --increase-ref-index changing
// nothing for FLUX.2; img2img; real CFG with a negative prompt; clear errors for a missing or
// wrong text encoder and a 16-channel VAE.
#include <gtest/gtest.h>

#include "../golden/flux2_e2e.h"

namespace {

namespace fs = std::filesystem;
namespace e2e = ggdiff::e2e;
namespace flux2 = ggdiff::e2e::flux2;
using e2e::contains;
using e2e::RunResult;

constexpr const char* kCase = "flux2_default";
constexpr const char* kEdit = "flux2_edit";

class Flux2Files : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_TRUE(flux2::prerequisites_ok());
        ASSERT_FALSE(flux2::case_args(kCase).empty()) << "no case " << kCase;
        dir_ = e2e::fresh_dir();
    }

    // ggdiff with `model`, the golden case `id`, `extra` and -o OUT.
    RunResult generate(const std::vector<std::string>& model, const std::string& out,
                       const std::vector<std::string>& extra = {}, const char* id = kCase) {
        std::vector<std::string> args = model;
        for (const std::string& a : flux2::case_args(id)) args.push_back(a);
        args.insert(args.end(), extra.begin(), extra.end());
        args.insert(args.end(), {"-o", out});
        return e2e::run_ggdiff(args, dir_, 600);
    }

    static void expect_close(const std::string& out, const std::string& reference, double limit,
                             const std::string& what) {
        const e2e::ImageDiff d = e2e::compare_images(out, reference);
        ASSERT_TRUE(d.ok) << what << ": " << d.error;
        std::printf("%s: mean_abs_diff %.3f max_abs_diff %d\n", what.c_str(), d.mean_abs,
                    d.max_abs);
        EXPECT_LE(d.mean_abs, limit) << what << ", max " << d.max_abs;
    }

    static double mean_diff(const std::string& a, const std::string& b) {
        const e2e::ImageDiff d = e2e::compare_images(a, b);
        EXPECT_TRUE(d.ok) << d.error;
        return d.ok ? d.mean_abs : 0.0;
    }

    static std::string golden(const char* file = "flux2_default.png") {
        return flux2::golden(file);
    }

    void expect_golden(const std::vector<std::string>& model, const std::string& what) {
        const std::string out = dir_ + "/out.png";
        RunResult r = generate(model, out);
        ASSERT_TRUE(r.succeeded()) << r.describe();
        expect_close(out, golden(), flux2::tolerance(), what);
    }

    // A run expected to fail before generating: exits non-zero, no crash, says each of `words`.
    void expect_error(const std::vector<std::string>& model,
                      const std::vector<std::string>& words) {
        RunResult r = generate(model, dir_ + "/never.png");
        EXPECT_TRUE(r.failed_cleanly()) << r.describe();
        for (const std::string& w : words)
            EXPECT_TRUE(contains(r.err, w)) << w << "\n" << r.describe();
        EXPECT_FALSE(fs::exists(dir_ + "/never.png"));
    }

    std::string dir_;
};

TEST_F(Flux2Files, InfoNamesFlux2ForTheDitAndForThePartFiles) {
    RunResult alone = e2e::run_ggdiff({"-M", "info", "--diffusion-model", flux2::dit()}, dir_, 60);
    ASSERT_TRUE(alone.succeeded()) << alone.describe();
    EXPECT_TRUE(contains(alone.out, "family:      flux2 (FLUX.2)")) << alone.describe();
    std::vector<std::string> all = {"-M", "info"};
    for (const std::string& a : flux2::model_args()) all.push_back(a);
    RunResult parts = e2e::run_ggdiff(all, dir_, 60);
    ASSERT_TRUE(parts.succeeded()) << parts.describe();
    EXPECT_TRUE(contains(parts.out, "family:      flux2 (FLUX.2)")) << parts.describe();
    for (const std::string& f : {flux2::dit(), flux2::llm(), flux2::vae()})
        EXPECT_TRUE(contains(parts.out, "file:        " + f)) << parts.describe();
}

// Each part converted to GGUF on its own (the DiT to q8_0, the others as stored) loads through
// the same flags and stays near the golden image; --type q8_0 on load likewise.
TEST_F(Flux2Files, GgufPartsAndTypeConversion) {
    const std::vector<std::pair<std::string, std::string>> parts = {
        {"--diffusion-model", flux2::dit()}, {"--llm", flux2::llm()}, {"--vae", flux2::vae()}};
    std::vector<std::string> model;
    for (const auto& [flag, file] : parts) {
        const std::string gguf = dir_ + "/" + fs::path(file).stem().string() + ".gguf";
        std::vector<std::string> convert = {"-M", "convert", flag, file, "-o", gguf};
        if (flag == "--diffusion-model") convert.insert(convert.end(), {"--type", "q8_0"});
        RunResult c = e2e::run_ggdiff(convert, dir_, 300);
        ASSERT_TRUE(c.succeeded()) << c.describe();
        model.insert(model.end(), {flag, gguf});
    }
    model.insert(model.end(), {"--llm-tokenizer", flux2::tokenizer_dir()});
    std::vector<std::string> info = {"-M", "info"};
    info.insert(info.end(), model.begin(), model.end());
    RunResult i = e2e::run_ggdiff(info, dir_, 60);
    ASSERT_TRUE(i.succeeded()) << i.describe();
    EXPECT_TRUE(contains(i.out, "family:      flux2 (FLUX.2)")) << i.describe();
    EXPECT_TRUE(contains(i.out, "q8_0=")) << i.describe();
    const std::string a = dir_ + "/gguf.png";
    RunResult r = generate(model, a);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    expect_close(a, golden(), 6.0, "GGUF parts (DiT q8_0)");

    const std::string q8 = dir_ + "/q8.png";
    RunResult t = generate(flux2::model_args(), q8, {"--type", "q8_0"});
    ASSERT_TRUE(t.succeeded()) << t.describe();
    expect_close(q8, golden(), 6.0, "--type q8_0 against the f16 golden");
}

TEST_F(Flux2Files, DiffusersFolder) {
    const std::string folder = dir_ + "/FLUX.2-klein-tiny";
    const std::string cmd = "/usr/bin/python3 '" + std::string(GGDIFF_SOURCE_DIR) +
                            "/tests/tools/flux2_layouts.py' diffusers '" + folder + "' '" +
                            flux2::dit() + "' '" + flux2::llm() + "' '" + flux2::vae() + "' '" +
                            flux2::tokenizer_dir() + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    RunResult info = e2e::run_ggdiff({"-M", "info", "-m", folder}, dir_, 60);
    ASSERT_TRUE(info.succeeded()) << info.describe();
    EXPECT_TRUE(contains(info.out, "family:      flux2 (FLUX.2)")) << info.describe();
    expect_golden({"-m", folder}, "diffusers folder");
}

// The edit case with its reference image given twice differs from the case with one; the
// reference index flag changes nothing (FLUX.2 always gives each reference its own index).
TEST_F(Flux2Files, SeveralReferenceImages) {
    const std::string one = dir_ + "/one.png", two = dir_ + "/two.png", inc = dir_ + "/inc.png";
    RunResult a = generate(flux2::model_args(), one, {}, kEdit);
    ASSERT_TRUE(a.succeeded()) << a.describe();
    expect_close(one, golden("flux2_edit.png"), flux2::tolerance(), "edit");
    RunResult b = generate(flux2::model_args(), two, {"-r", flux2::ref_image()}, kEdit);
    ASSERT_TRUE(b.succeeded()) << b.describe();
    EXPECT_GT(mean_diff(one, two), 1.0) << "a second reference image changed nothing";
    RunResult c = generate(flux2::model_args(), inc, {"--increase-ref-index"}, kEdit);
    ASSERT_TRUE(c.succeeded()) << c.describe();
    EXPECT_LT(mean_diff(one, inc), 0.01) << "--increase-ref-index changed a FLUX.2 edit";
}

// A 96x64 reference for a 64x64 image is resized (to 80x48: about 64x64 pixels in multiples
// of 16); with --disable-auto-resize-ref-image it is used at its own size: another image.
TEST_F(Flux2Files, ReferenceResizeAndItsOptOut) {
    // The wide golden image is 96x64.
    const std::string wide = golden("flux2_wide.png");
    std::vector<std::string> edit = flux2::model_args();
    const std::string a = dir_ + "/auto.png", b = dir_ + "/own.png";
    std::vector<std::string> base = {"-p", "turn it blue", "-W", "64", "-H", "64", "--steps",
                                     "3",  "--cfg-scale",  "1",  "-s", "4",  "-r", wide,
                                     "-v"};
    std::vector<std::string> args = edit;
    args.insert(args.end(), base.begin(), base.end());
    args.insert(args.end(), {"-o", a});
    RunResult r1 = e2e::run_ggdiff(args, dir_, 600);
    ASSERT_TRUE(r1.succeeded()) << r1.describe();
    EXPECT_TRUE(contains(r1.err, "reference image 1: 96x64 -> 80x48")) << r1.describe();
    args.back() = b;
    args.insert(args.end() - 2, "--disable-auto-resize-ref-image");
    RunResult r2 = e2e::run_ggdiff(args, dir_, 600);
    ASSERT_TRUE(r2.succeeded()) << r2.describe();
    EXPECT_FALSE(contains(r2.err, "reference image 1: 96x64 ->")) << r2.describe();
    EXPECT_GT(mean_diff(a, b), 1.0) << "the reference's size changed nothing";
}

// img2img from the golden image at strength 0.5 lands between it and a fresh image; real CFG
// with a negative prompt (klein base style) differs from the distilled cfg 1.
TEST_F(Flux2Files, Img2ImgAndCfgWithNegativePrompt) {
    const std::string i2i = dir_ + "/i2i.png", cfg = dir_ + "/cfg.png";
    RunResult r =
        generate(flux2::model_args(), i2i, {"-i", golden("flux2_wide.png"), "--strength", "0.5"});
    ASSERT_TRUE(r.succeeded()) << r.describe();
    EXPECT_GT(mean_diff(i2i, golden()), 1.0);
    RunResult c =
        generate(flux2::model_args(), cfg, {"--cfg-scale", "4", "-n", "blurry, low quality"});
    ASSERT_TRUE(c.succeeded()) << c.describe();
    EXPECT_GT(mean_diff(cfg, golden()), 1.0) << "cfg 4 with a negative prompt changed nothing";
}

TEST_F(Flux2Files, MissingOrWrongPartsAreErrors) {
    expect_error(flux2::model_args_with("--llm", ""), {"FLUX.2 needs its text encoder", "--llm"});
    expect_error(flux2::model_args_with("--vae", ""), {"32-channel VAE", "--vae"});
    // FLUX.1's 16-channel VAE.
    expect_error(flux2::model_args_with("--vae", flux2::fixture("flux_ae")),
                 {"16 latent channels", "FLUX.2"});
    // Z-Image's Qwen3 (2560 wide in the real model; here another width than klein's).
    expect_error(flux2::model_args_with("--llm", flux2::fixture("zimage_tiny_llm")),
                 {"txt_in takes"});
    std::vector<std::string> eps = flux2::model_args();
    eps.insert(eps.end(), {"--prediction", "eps"});
    expect_error(eps, {"--prediction eps does not apply to FLUX.2"});
}

}  // namespace
