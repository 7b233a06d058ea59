// Chroma through the CLI, files as users have them: -M info names Chroma; the DiT converted to a
// q8_0 GGUF, or to q8_0 on load, stays near the golden image of the chroma_tiny suite; a
// diffusers ChromaPipeline folder gives the golden image; --clip_l is a clear error (Chroma
// reads T5 alone); the padding-mask flags each change the image; img2img from the golden image;
// a batch of two gives seed and seed+1, each with its A1111 parameters naming the model.
#include <gtest/gtest.h>

#include "../golden/chroma_e2e.h"

namespace {

namespace fs = std::filesystem;
namespace e2e = ggdiff::e2e;
namespace chroma = ggdiff::e2e::chroma;
using e2e::contains;
using e2e::RunResult;

constexpr const char* kCase = "chroma_euler";  // euler, cfg 1, seed 42, 64x64, 4 steps
constexpr const char* kFamily = "family:      chroma (Chroma)";

// `args` with the value after `flag` replaced by `value` (all occurrences).
std::vector<std::string> with_value(std::vector<std::string> args, const std::string& flag,
                                    const std::string& value) {
    for (size_t i = 0; i + 1 < args.size(); ++i)
        if (args[i] == flag) args[i + 1] = value;
    return args;
}

class ChromaFiles : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_TRUE(chroma::prerequisites_ok());
        ASSERT_FALSE(chroma::case_args(kCase).empty()) << "no case " << kCase;
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

    // ggdiff with `model`, the golden case kCase, `extra` and -o OUT.
    RunResult generate(const std::vector<std::string>& model, const std::string& out,
                       const std::vector<std::string>& extra = {}) {
        return run(model, chroma::case_args(kCase), out, extra);
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

    static std::string golden() { return chroma::golden("chroma_euler.png"); }

    std::string dir_;
};

TEST_F(ChromaFiles, InfoNamesChromaForTheDitAndForThePartFiles) {
    RunResult alone = e2e::run_ggdiff({"-M", "info", "--diffusion-model", chroma::dit()}, dir_, 60);
    ASSERT_TRUE(alone.succeeded()) << alone.describe();
    EXPECT_TRUE(contains(alone.out, kFamily)) << alone.describe();
    std::vector<std::string> all = {"-M", "info"};
    for (const std::string& a : chroma::model_args()) all.push_back(a);
    RunResult parts = e2e::run_ggdiff(all, dir_, 60);
    ASSERT_TRUE(parts.succeeded()) << parts.describe();
    EXPECT_TRUE(contains(parts.out, kFamily)) << parts.describe();
    for (const std::string& f : {chroma::dit(), chroma::t5(), chroma::vae()})
        EXPECT_TRUE(contains(parts.out, "file:        " + f)) << parts.describe();
}

// The DiT converted to a q8_0 GGUF loads in place of the safetensors one and stays near the
// golden image (1.5 apart here); --type q8_0 on load (every part quantized: 2.8) likewise.
TEST_F(ChromaFiles, GgufDitAndTypeConversion) {
    const std::string gguf = dir_ + "/chroma_tiny_dit_q8_0.gguf";
    RunResult c = e2e::run_ggdiff(
        {"-M", "convert", "--diffusion-model", chroma::dit(), "--type", "q8_0", "-o", gguf}, dir_,
        300);
    ASSERT_TRUE(c.succeeded()) << c.describe();
    const std::vector<std::string> model = chroma::model_args_with("--diffusion-model", gguf);
    std::vector<std::string> info = {"-M", "info"};
    info.insert(info.end(), model.begin(), model.end());
    RunResult i = e2e::run_ggdiff(info, dir_, 60);
    ASSERT_TRUE(i.succeeded()) << i.describe();
    EXPECT_TRUE(contains(i.out, kFamily)) << i.describe();
    EXPECT_TRUE(contains(i.out, "q8_0=")) << i.describe();

    const std::string a = dir_ + "/gguf.png", b = dir_ + "/type.png";
    RunResult r1 = generate(model, a);
    ASSERT_TRUE(r1.succeeded()) << r1.describe();
    expect_close(a, golden(), 4.0, "GGUF DiT (q8_0)");
    RunResult r2 = generate(chroma::model_args(), b, {"--type", "q8_0"});
    ASSERT_TRUE(r2.succeeded()) << r2.describe();
    expect_close(b, golden(), 4.0, "--type q8_0 against the golden");
}

// A diffusers ChromaPipeline folder (transformer/ in ChromaTransformer2DModel names, a T5
// text_encoder/ with the T5 tokenizer in tokenizer/) is Chroma and gives the golden image.
TEST_F(ChromaFiles, DiffusersChromaPipelineFolder) {
    const std::string folder = dir_ + "/Chroma-tiny";
    const std::string cmd = "/usr/bin/python3 '" + std::string(GGDIFF_SOURCE_DIR) +
                            "/tests/tools/chroma_layouts.py' '" + folder + "' '" + chroma::dit() +
                            "' '" + chroma::t5() + "' '" + chroma::vae() + "' '" +
                            chroma::t5_tokenizer() + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    ASSERT_TRUE(contains(e2e::read_text(folder + "/model_index.json"), "ChromaPipeline"));
    RunResult info = e2e::run_ggdiff({"-M", "info", "-m", folder}, dir_, 60);
    ASSERT_TRUE(info.succeeded()) << info.describe();
    EXPECT_TRUE(contains(info.out, kFamily)) << info.describe();
    const std::string out = dir_ + "/out.png";
    RunResult r = generate({"-m", folder}, out);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    expect_close(out, golden(), chroma::tolerance(), "diffusers ChromaPipeline folder");
}

// Chroma has no CLIP: a --clip_l file is refused before anything runs, naming the flag.
TEST_F(ChromaFiles, ClipLIsAClearError) {
    std::vector<std::string> model = chroma::model_args();
    model.insert(model.end(), {"--clip_l", e2e::flux::clip_l()});
    const std::string out = dir_ + "/never.png";
    RunResult r = generate(model, out);
    EXPECT_TRUE(r.failed_cleanly()) << r.describe();
    EXPECT_TRUE(contains(r.err, "--clip_l")) << r.describe();
    EXPECT_TRUE(contains(r.err, "Chroma")) << r.describe();
    EXPECT_FALSE(fs::exists(out));
}

// Chroma is not an edit model: -r is refused before anything runs (so an A1111 img2img stays
// img2img on the server).
TEST_F(ChromaFiles, ReferenceImageIsRefused) {
    const std::string out = dir_ + "/never.png";
    RunResult r = generate(chroma::model_args(), out,
                           {"-r", e2e::shared_dir() + "/golden/chroma_tiny/chroma_euler.png"});
    EXPECT_TRUE(r.failed_cleanly()) << r.describe();
    EXPECT_TRUE(contains(r.err, "--ref-image is not supported for Chroma")) << r.describe();
    EXPECT_FALSE(fs::exists(out));
}

// Each padding-mask flag gives another image than the default (DiT mask on with one pad, no T5
// mask): the reference moved the 4-step case by 33.7, 32.8 and 6.5; one step here (the
// approximator makes each step of this fixture slow) shows it as well.
TEST_F(ChromaFiles, MaskFlagsChangeTheImage) {
    const std::vector<std::string> one_step = {"--steps", "1"};
    const std::string base = dir_ + "/base.png";
    RunResult r = generate(chroma::model_args(), base, one_step);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    const std::vector<std::vector<std::string>> flags = {
        {"--chroma-disable-dit-mask"}, {"--chroma-enable-t5-mask"}, {"--chroma-t5-mask-pad", "3"}};
    for (size_t k = 0; k < flags.size(); ++k) {
        SCOPED_TRACE(flags[k].front());
        const std::string out = dir_ + "/flag" + std::to_string(k) + ".png";
        std::vector<std::string> extra = one_step;
        extra.insert(extra.end(), flags[k].begin(), flags[k].end());
        RunResult f = generate(chroma::model_args(), out, extra);
        ASSERT_TRUE(f.succeeded()) << f.describe();
        const double d = mean_diff(base, out);
        std::printf("%s: mean_abs_diff %.3f against the default\n", flags[k].front().c_str(), d);
        EXPECT_GT(d, 1.0) << flags[k].front() << " changed nothing";
    }
}

// img2img from the golden image (the suite's INIT) with the golden case's request at strength
// 0.6 runs and is another image than that txt2img one; its A1111 parameters carry the strength.
TEST_F(ChromaFiles, Img2ImgDiffersFromTxt2Img) {
    const std::string out = dir_ + "/i2i.png";
    RunResult r = generate(chroma::model_args(), out, {"-i", golden(), "--strength", "0.6"});
    ASSERT_TRUE(r.succeeded()) << r.describe();
    const double d = mean_diff(out, golden());
    std::printf("img2img against txt2img: mean_abs_diff %.3f\n", d);
    EXPECT_GT(d, 1.0) << "img2img gave the txt2img image";
    auto text = ggdiff::read_image_parameters(out);
    ASSERT_TRUE(text.ok());
    auto info = ggdiff::parse_infotext(*text);
    ASSERT_TRUE(info.ok()) << *text;
    ASSERT_TRUE(info->denoising_strength.has_value()) << *text;
    EXPECT_FLOAT_EQ(*info->denoising_strength, 0.6f);
}

// -b 2 -s 42 (two steps): the seed-42 image, then the seed-43 one, which is the single run with
// -s 43; each PNG's A1111 parameters name its seed and the model (the DiT file's stem), and
// carry no distilled guidance (Chroma has none).
TEST_F(ChromaFiles, BatchGivesSeedAndSeedPlusOneWithMetadata) {
    const std::vector<std::string> two_steps = {"--steps", "2"};
    const std::string batch = dir_ + "/batch.png", single = dir_ + "/s43.png";
    std::vector<std::string> extra = two_steps;
    extra.insert(extra.end(), {"-b", "2"});
    RunResult b = generate(chroma::model_args(), batch, extra);
    ASSERT_TRUE(b.succeeded()) << b.describe();
    const std::string second = dir_ + "/batch_1.png";
    ASSERT_TRUE(fs::is_regular_file(second)) << b.describe();
    RunResult s = run(chroma::model_args(), with_value(chroma::case_args(kCase), "-s", "43"),
                      single, two_steps);
    ASSERT_TRUE(s.succeeded()) << s.describe();
    expect_close(second, single, 0.05, "batch image 1 against -s 43");
    EXPECT_GT(mean_diff(batch, second), 3.0) << "both batch images are alike";
    for (int i = 0; i < 2; ++i) {
        SCOPED_TRACE(i);
        auto text = ggdiff::read_image_parameters(i == 0 ? batch : second);
        ASSERT_TRUE(text.ok());
        auto info = ggdiff::parse_infotext(*text);
        ASSERT_TRUE(info.ok()) << *text;
        EXPECT_EQ(info->seed, 42 + i) << *text;
        EXPECT_EQ(info->model, "chroma_tiny_dit") << *text;
        EXPECT_EQ(info->prompt, "a photograph of an astronaut riding a horse") << *text;
        EXPECT_EQ(info->width, 64);
        EXPECT_EQ(info->steps, 2);
        EXPECT_FALSE(info->guidance.has_value()) << *text;
    }
}

}  // namespace
