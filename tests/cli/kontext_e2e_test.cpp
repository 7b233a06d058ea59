// FLUX.1 Kontext through the CLI, files as users have them: -M info names FLUX.1 (Kontext is a
// FLUX.1-dev checkpoint; -r makes it edit); the DiT converted to a q8_0 GGUF, or to q8_0 on
// load, and a diffusers FluxKontextPipeline folder give the golden image of the kontext_tiny
// suite; reference images: their automatic resize and --disable-auto-resize-ref-image, another
// reference or --increase-ref-index changing the image; img2img with a reference; a clear error
// for a reference image that cannot be read.
#include <gtest/gtest.h>

#include "../golden/kontext_e2e.h"

namespace {

namespace fs = std::filesystem;
namespace e2e = ggdiff::e2e;
namespace kontext = ggdiff::e2e::kontext;
using e2e::contains;
using e2e::RunResult;

constexpr const char* kCase = "kontext_ref1";      // one reference, euler, seed 42
constexpr const char* kRefIdx = "kontext_refidx";  // two references, --increase-ref-index

// `args` with the value after `flag` replaced by `value` (all occurrences).
std::vector<std::string> with_value(std::vector<std::string> args, const std::string& flag,
                                    const std::string& value) {
    for (size_t i = 0; i + 1 < args.size(); ++i)
        if (args[i] == flag) args[i + 1] = value;
    return args;
}

// `args` without `flag` (a switch, no value).
std::vector<std::string> without(std::vector<std::string> args, const std::string& flag) {
    args.erase(std::remove(args.begin(), args.end(), flag), args.end());
    return args;
}

class KontextFiles : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_TRUE(kontext::prerequisites_ok());
        ASSERT_FALSE(kontext::case_args(kCase).empty()) << "no case " << kCase;
        ASSERT_FALSE(kontext::case_args(kRefIdx).empty()) << "no case " << kRefIdx;
        dir_ = e2e::fresh_dir();
    }

    // ggdiff with `model`, the request `request`, `extra` and -o OUT.
    RunResult run(const std::vector<std::string>& model, const std::vector<std::string>& request,
                  const std::string& out, const std::vector<std::string>& extra = {}) {
        std::vector<std::string> args = model;
        args.insert(args.end(), request.begin(), request.end());
        args.insert(args.end(), extra.begin(), extra.end());
        args.insert(args.end(), {"-o", out});
        return e2e::run_ggdiff(args, dir_, 600);
    }

    // ggdiff with `model`, the golden case `id`, `extra` and -o OUT.
    RunResult generate(const std::vector<std::string>& model, const std::string& out,
                       const std::vector<std::string>& extra = {}, const char* id = kCase) {
        return run(model, kontext::case_args(id), out, extra);
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

    static std::string golden(const char* id = kCase) {
        const std::vector<std::string> out = kontext::case_outputs(id);
        return out.empty() ? "" : out.front();
    }

    void expect_golden(const std::vector<std::string>& model, double limit,
                       const std::string& what) {
        const std::string out = dir_ + "/out.png";
        RunResult r = generate(model, out);
        ASSERT_TRUE(r.succeeded()) << r.describe();
        expect_close(out, golden(), limit, what);
    }

    std::string dir_;
};

TEST_F(KontextFiles, InfoNamesFlux1ForTheDitAndForThePartFiles) {
    RunResult alone =
        e2e::run_ggdiff({"-M", "info", "--diffusion-model", kontext::dit()}, dir_, 60);
    ASSERT_TRUE(alone.succeeded()) << alone.describe();
    EXPECT_TRUE(contains(alone.out, "family:      flux (FLUX.1)")) << alone.describe();
    std::vector<std::string> all = {"-M", "info"};
    for (const std::string& a : kontext::model_args()) all.push_back(a);
    RunResult parts = e2e::run_ggdiff(all, dir_, 60);
    ASSERT_TRUE(parts.succeeded()) << parts.describe();
    EXPECT_TRUE(contains(parts.out, "family:      flux (FLUX.1)")) << parts.describe();
    for (const std::string& f : {kontext::dit(), kontext::clip_l(), kontext::t5(), kontext::vae()})
        EXPECT_TRUE(contains(parts.out, "file:        " + f)) << parts.describe();
}

// The DiT converted to a q8_0 GGUF loads in place of the safetensors one and stays near the
// golden image (1.4 apart here); --type q8_0 on load (every part quantized: 3.4) likewise.
TEST_F(KontextFiles, GgufDitAndTypeConversion) {
    const std::string gguf = dir_ + "/kontext_tiny_dit_q8_0.gguf";
    RunResult c = e2e::run_ggdiff(
        {"-M", "convert", "--diffusion-model", kontext::dit(), "--type", "q8_0", "-o", gguf}, dir_,
        300);
    ASSERT_TRUE(c.succeeded()) << c.describe();
    const std::vector<std::string> model = kontext::model_args_with("--diffusion-model", gguf);
    std::vector<std::string> info = {"-M", "info"};
    info.insert(info.end(), model.begin(), model.end());
    RunResult i = e2e::run_ggdiff(info, dir_, 60);
    ASSERT_TRUE(i.succeeded()) << i.describe();
    EXPECT_TRUE(contains(i.out, "family:      flux (FLUX.1)")) << i.describe();
    EXPECT_TRUE(contains(i.out, "q8_0=")) << i.describe();

    const std::string a = dir_ + "/gguf.png", b = dir_ + "/type.png";
    RunResult r1 = generate(model, a);
    ASSERT_TRUE(r1.succeeded()) << r1.describe();
    expect_close(a, golden(), 6.0, "GGUF DiT (q8_0)");
    RunResult r2 = generate(kontext::model_args(), b, {"--type", "q8_0"});
    ASSERT_TRUE(r2.succeeded()) << r2.describe();
    expect_close(b, golden(), 6.0, "--type q8_0 against the f16 golden");
}

// A diffusers FluxKontextPipeline folder (transformer/ in diffusers names, both tokenizers in
// the folder) is FLUX.1 and gives the golden image.
TEST_F(KontextFiles, DiffusersKontextFolder) {
    const std::string folder = dir_ + "/FLUX.1-Kontext-tiny";
    const std::string cmd = "/usr/bin/python3 '" + std::string(GGDIFF_SOURCE_DIR) +
                            "/tests/tools/flux_layouts.py' diffusers '" + folder + "' '" +
                            kontext::dit() + "' '" + kontext::clip_l() + "' '" + kontext::t5() +
                            "' '" + kontext::vae() + "' '" + e2e::merges_path() + "' '" +
                            kontext::t5_tokenizer() + "' FluxKontextPipeline";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    ASSERT_TRUE(contains(e2e::read_text(folder + "/model_index.json"), "FluxKontextPipeline"));
    RunResult info = e2e::run_ggdiff({"-M", "info", "-m", folder}, dir_, 60);
    ASSERT_TRUE(info.succeeded()) << info.describe();
    EXPECT_TRUE(contains(info.out, "family:      flux (FLUX.1)")) << info.describe();
    expect_golden({"-m", folder}, kontext::tolerance(), "diffusers FluxKontextPipeline folder");
}

// A 96x64 reference (the golden kontext_wide image) for a 64x64 output is resized to about
// 64x64 pixels in multiples of 16 (80x48); with --disable-auto-resize-ref-image it keeps its
// own size (a multiple of the VAE's 8 already): another image.
TEST_F(KontextFiles, ReferenceResizeAndItsOptOut) {
    const std::string wide = golden("kontext_wide");
    ASSERT_FALSE(wide.empty());
    {
        const auto img = ggdiff::read_image(wide);
        ASSERT_TRUE(img.ok()) << img.status().message();
        ASSERT_EQ(img->width, 96);
        ASSERT_EQ(img->height, 64);
    }
    const std::vector<std::string> request = with_value(kontext::case_args(kCase), "-r", wide);
    const std::string a = dir_ + "/auto.png", b = dir_ + "/own.png";
    RunResult r1 = run(kontext::model_args(), request, a, {"-v"});
    ASSERT_TRUE(r1.succeeded()) << r1.describe();
    EXPECT_TRUE(contains(r1.err, "reference image 1: 96x64 -> 80x48")) << r1.describe();
    RunResult r2 =
        run(kontext::model_args(), request, b, {"-v", "--disable-auto-resize-ref-image"});
    ASSERT_TRUE(r2.succeeded()) << r2.describe();
    EXPECT_FALSE(contains(r2.err, "reference image 1: 96x64 ->")) << r2.describe();
    for (const std::string& out : {a, b}) {
        const auto img = ggdiff::read_image(out);
        ASSERT_TRUE(img.ok()) << img.status().message();
        EXPECT_EQ(img->width, 64);
        EXPECT_EQ(img->height, 64);
    }
    EXPECT_GT(mean_diff(a, b), 3.0) << "the reference's size changed nothing";
}

// The reference image steers the edit: another one gives another image. Two references take
// index 1 with offsets unless --increase-ref-index gives them 1 and 2: the golden kontext_refidx
// image moves without the flag; with one reference the flag changes nothing (index 1, no
// offset either way).
TEST_F(KontextFiles, ReferenceImageAndIndexChangeTheImage) {
    const std::string base = dir_ + "/base.png", other = dir_ + "/other.png";
    RunResult r = generate(kontext::model_args(), base);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    expect_close(base, golden(), kontext::tolerance(), "kontext_ref1");
    RunResult o = run(kontext::model_args(),
                      with_value(kontext::case_args(kCase), "-r", kontext::ref_stripes()), other);
    ASSERT_TRUE(o.succeeded()) << o.describe();
    EXPECT_GT(mean_diff(base, other), 3.0) << "another reference image changed nothing";

    const std::string inc = dir_ + "/inc.png";
    RunResult i = generate(kontext::model_args(), inc, {"--increase-ref-index"});
    ASSERT_TRUE(i.succeeded()) << i.describe();
    EXPECT_LT(mean_diff(base, inc), 0.01) << "--increase-ref-index moved a one-reference edit";

    const std::string idx = dir_ + "/idx.png", shared = dir_ + "/shared.png";
    RunResult a = generate(kontext::model_args(), idx, {}, kRefIdx);
    ASSERT_TRUE(a.succeeded()) << a.describe();
    expect_close(idx, golden(kRefIdx), kontext::tolerance(), "kontext_refidx");
    RunResult b = run(kontext::model_args(),
                      without(kontext::case_args(kRefIdx), "--increase-ref-index"), shared);
    ASSERT_TRUE(b.succeeded()) << b.describe();
    EXPECT_GT(mean_diff(idx, shared), 3.0) << "--increase-ref-index changed nothing";
}

// img2img (-i) with a reference: the init image (the golden kontext_ref2 image) moves the edit
// away from the txt2img one, and the reference still matters under img2img.
TEST_F(KontextFiles, Img2ImgWithReference) {
    const std::string init = golden("kontext_ref2");
    const std::string i2i = dir_ + "/i2i.png", other = dir_ + "/other.png";
    RunResult r = generate(kontext::model_args(), i2i, {"-i", init, "--strength", "0.75"});
    ASSERT_TRUE(r.succeeded()) << r.describe();
    EXPECT_GT(mean_diff(i2i, golden()), 3.0) << "the init image changed nothing";
    RunResult o = run(kontext::model_args(),
                      with_value(kontext::case_args(kCase), "-r", kontext::ref_stripes()), other,
                      {"-i", init, "--strength", "0.75"});
    ASSERT_TRUE(o.succeeded()) << o.describe();
    EXPECT_GT(mean_diff(i2i, other), 3.0) << "the reference changed nothing under img2img";
}

// A reference image that is missing, not an image or a truncated PNG: a clear error naming the
// file and the flag, exit status non-zero, no image written.
TEST_F(KontextFiles, UnreadableReferenceImageIsAnError) {
    const std::string garbage = dir_ + "/garbage.png", truncated = dir_ + "/truncated.png";
    {
        std::ofstream(garbage, std::ios::binary) << "this is not an image at all";
        const std::string png = e2e::read_text(kontext::ref_shapes());
        ASSERT_GT(png.size(), 100u);
        std::ofstream(truncated, std::ios::binary) << png.substr(0, png.size() / 2);
    }
    for (const std::string& bad : {dir_ + "/missing.png", garbage, truncated}) {
        SCOPED_TRACE(bad);
        const std::string out = dir_ + "/never.png";
        RunResult r =
            run(kontext::model_args(), with_value(kontext::case_args(kCase), "-r", bad), out);
        EXPECT_TRUE(r.failed_cleanly()) << r.describe();
        EXPECT_TRUE(contains(r.err, bad)) << r.describe();
        EXPECT_TRUE(contains(r.err, "--ref-image")) << r.describe();
        EXPECT_FALSE(fs::exists(out));
    }
}

}  // namespace
