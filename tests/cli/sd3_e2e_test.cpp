// SD3 / SD3.5 through the CLI: files as users have them (the five part files, each converted to
// GGUF or to q8_0 on load, one SD3.5 single-file checkpoint with or without T5 inside, a
// diffusers StableDiffusion3Pipeline folder) give the golden image of the sd3_tiny suite; a
// LoRA in kohya names and the same deltas in diffusers names change the image alike; without
// T5 SD3 still generates (with a warning), without any text encoder or with a T5 of the wrong
// width it fails with a message that says so.
#include <gtest/gtest.h>

#include "../golden/sd3_e2e.h"

namespace {

namespace fs = std::filesystem;
namespace e2e = ggdiff::e2e;
namespace sd3 = ggdiff::e2e::sd3;
using e2e::contains;
using e2e::RunResult;

constexpr const char* kCase = "sd3_euler";

std::string layouts_tool() {
    return std::string(GGDIFF_SOURCE_DIR) + "/tests/tools/sd3_layouts.py";
}

bool run_python(const std::vector<std::string>& args) {
    std::string cmd = "/usr/bin/python3 '" + layouts_tool() + "'";
    for (const std::string& a : args) cmd += " '" + a + "'";
    return std::system(cmd.c_str()) == 0;
}

// The arguments sd3_layouts.py takes after its mode and output: the five files, the tokenizers.
std::vector<std::string> layout_args(const std::string& mode, const std::string& out) {
    return {mode,      out,        sd3::mmdit(),       sd3::clip_l(),      sd3::clip_g(),
            sd3::t5(), sd3::vae(), e2e::merges_path(), sd3::t5_tokenizer()};
}

class Sd3Files : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_TRUE(sd3::prerequisites_ok());
        ASSERT_FALSE(sd3::case_args(kCase).empty()) << "no case " << kCase;
        dir_ = e2e::fresh_dir();
    }

    // ggdiff with `model` (the files to load), the golden case sd3_euler, `extra` and -o OUT.
    RunResult generate(const std::vector<std::string>& model, const std::string& out,
                       const std::vector<std::string>& extra = {}) {
        std::vector<std::string> args = model;
        for (const std::string& a : sd3::case_args(kCase)) args.push_back(a);
        args.insert(args.end(), extra.begin(), extra.end());
        args.insert(args.end(), {"-o", out});
        return e2e::run_ggdiff(args, dir_, 600);
    }

    // The image of `out` against `reference`: within `limit` (mean absolute difference).
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

    static std::string golden() { return sd3::golden("sd3_euler.png"); }

    // `model` gives the golden image.
    void expect_golden(const std::vector<std::string>& model, const std::string& what) {
        const std::string out = dir_ + "/out.png";
        RunResult r = generate(model, out);
        ASSERT_TRUE(r.succeeded()) << r.describe();
        expect_close(out, golden(), sd3::tolerance(), what);
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

TEST_F(Sd3Files, InfoNamesSd3ForTheMmditAndForThePartFiles) {
    RunResult alone = e2e::run_ggdiff({"-M", "info", "--diffusion-model", sd3::mmdit()}, dir_, 60);
    ASSERT_TRUE(alone.succeeded()) << alone.describe();
    EXPECT_TRUE(contains(alone.out, "family:      sd3 (SD3)")) << alone.describe();

    std::vector<std::string> all = {"-M", "info"};
    for (const std::string& a : sd3::model_args()) all.push_back(a);
    RunResult parts = e2e::run_ggdiff(all, dir_, 60);
    ASSERT_TRUE(parts.succeeded()) << parts.describe();
    EXPECT_TRUE(contains(parts.out, "family:      sd3 (SD3)")) << parts.describe();
    for (const std::string& f : {sd3::mmdit(), sd3::clip_l(), sd3::clip_g(), sd3::t5(), sd3::vae()})
        EXPECT_TRUE(contains(parts.out, "file:        " + f)) << parts.describe();
}

// Each part converted to GGUF on its own (the MMDiT to f32, the others keeping f16) loads
// through the same flags and gives the golden image; --type q8_0 on load stays close to it.
TEST_F(Sd3Files, GgufPartsAndTypeConversion) {
    const std::vector<std::pair<std::string, std::string>> parts = {
        {"--diffusion-model", sd3::mmdit()},
        {"--clip_l", sd3::clip_l()},
        {"--clip_g", sd3::clip_g()},
        {"--t5xxl", sd3::t5()},
        {"--vae", sd3::vae()}};
    std::vector<std::string> model;
    for (const auto& [flag, file] : parts) {
        const std::string gguf = dir_ + "/" + fs::path(file).stem().string() + ".gguf";
        std::vector<std::string> convert = {"-M", "convert", flag, file, "-o", gguf};
        if (flag == "--diffusion-model") convert.insert(convert.end(), {"--type", "f32"});
        RunResult c = e2e::run_ggdiff(convert, dir_, 300);
        ASSERT_TRUE(c.succeeded()) << c.describe();
        model.insert(model.end(), {flag, gguf});
    }
    model.insert(model.end(),
                 {"--tokenizer", e2e::merges_path(), "--t5xxl-tokenizer", sd3::t5_tokenizer()});
    RunResult info = e2e::run_ggdiff(
        [&] {
            std::vector<std::string> a = {"-M", "info"};
            a.insert(a.end(), model.begin(), model.end());
            return a;
        }(),
        dir_, 60);
    ASSERT_TRUE(info.succeeded()) << info.describe();
    EXPECT_TRUE(contains(info.out, "family:      sd3 (SD3)")) << info.describe();
    EXPECT_TRUE(contains(info.out, "F32=")) << info.describe();
    expect_golden(model, "GGUF parts (MMDiT f32)");

    const std::string q8 = dir_ + "/q8.png";
    std::vector<std::string> typed = sd3::model_args();
    RunResult r = generate(typed, q8, {"--type", "q8_0"});
    ASSERT_TRUE(r.succeeded()) << r.describe();
    expect_close(q8, golden(), 6.0, "--type q8_0 against the f16 golden");
}

// One SD3.5-style file with every part inside, found by -m alone.
TEST_F(Sd3Files, SingleFileCheckpoint) {
    const std::string file = dir_ + "/sd3_all_in_one.safetensors";
    ASSERT_TRUE(run_python(layout_args("single", file)));
    expect_golden(
        {"-m", file, "--tokenizer", e2e::merges_path(), "--t5xxl-tokenizer", sd3::t5_tokenizer()},
        "single file");
}

// SD3 runs without T5 (its context rows are zeros), from a single file without it and from the
// part files without --t5xxl alike, with a warning; the image is not the one with T5.
TEST_F(Sd3Files, WithoutT5ItGeneratesWithAWarning) {
    const std::string file = dir_ + "/sd3_no_t5.safetensors";
    ASSERT_TRUE(run_python(layout_args("single-no-t5", file)));
    const std::string a = dir_ + "/single_no_t5.png", b = dir_ + "/parts_no_t5.png";
    RunResult single = generate({"-m", file, "--tokenizer", e2e::merges_path()}, a);
    ASSERT_TRUE(single.succeeded()) << single.describe();
    EXPECT_TRUE(contains(single.err, "SD3 without T5-XXL (--t5xxl)")) << single.describe();
    RunResult parts = generate(sd3::model_args_with("--t5xxl", ""), b);
    ASSERT_TRUE(parts.succeeded()) << parts.describe();
    EXPECT_TRUE(contains(parts.err, "SD3 without T5-XXL (--t5xxl)")) << parts.describe();
    expect_close(a, b, 0.5, "single file without T5 against the part files without --t5xxl");
    EXPECT_GT(mean_diff(a, golden()), 5.0) << "T5 made no difference";
}

// transformer/ in diffusers names (q/k/v apart, (scale, shift) norms), the diffusers VAE, the
// three text encoders and the tokenizers all found in the folder.
TEST_F(Sd3Files, DiffusersFolder) {
    const std::string folder = dir_ + "/SD3.5-tiny";
    ASSERT_TRUE(run_python(layout_args("diffusers", folder)));
    expect_golden({"-m", folder}, "diffusers folder");
}

// A LoRA on joint blocks 0-3 (fused q/k/v of both streams, attn.proj, mlp.fc1) in kohya names
// and the same deltas in diffusers/PEFT names (to_q / to_k / to_v, add_*_proj): both change
// the image, and by the same amount.
TEST_F(Sd3Files, LoraInKohyaAndDiffusersNamesGiveOneImage) {
    const std::string loras = dir_ + "/loras";
    fs::create_directories(loras);
    ASSERT_TRUE(run_python({"lora", loras, sd3::mmdit()}));
    const std::string prompt = sd3::case_args(kCase)[1];
    const std::string a = dir_ + "/kohya.png", b = dir_ + "/diffusers.png";
    RunResult k = generate(sd3::model_args(), a,
                           {"--lora-model-dir", loras, "-p", prompt + " <lora:sd3_kohya:1>"});
    ASSERT_TRUE(k.succeeded()) << k.describe();
    RunResult d = generate(sd3::model_args(), b,
                           {"--lora-model-dir", loras, "-p", prompt + " <lora:sd3_diffusers:1>"});
    ASSERT_TRUE(d.succeeded()) << d.describe();
    for (const RunResult* r : {&k, &d}) {
        EXPECT_TRUE(contains(r->err, "LoRA: 1 file(s)")) << r->describe();
        EXPECT_FALSE(contains(r->err, "match no weight")) << r->describe();
    }
    expect_close(a, b, 0.5, "kohya against diffusers LoRA names");
    const double moved = mean_diff(a, golden());
    std::printf("the LoRA moves the image by %.3f\n", moved);
    EXPECT_GT(moved, 3.0) << "the LoRA did not change the image";
}

TEST_F(Sd3Files, MissingOrWrongTextEncodersAreNamed) {
    // No text encoder at all.
    std::vector<std::string> none = sd3::model_args_with("--clip_l", "");
    for (const char* flag : {"--clip_g", "--t5xxl", "--t5xxl-tokenizer"}) {
        std::vector<std::string> kept;
        for (size_t i = 0; i + 1 < none.size(); i += 2) {
            if (none[i] != flag) kept.insert(kept.end(), {none[i], none[i + 1]});
        }
        none = kept;
    }
    expect_error(none, {"SD3 needs its text encoders", "--clip_l", "--clip_g", "--t5xxl"});
    // FLUX's tiny T5 is 64 wide; the MMDiT's context_embedder takes 4096.
    const std::string flux_t5 = sd3::fixture("flux_tiny_t5");
    ASSERT_TRUE(fs::is_regular_file(flux_t5))
        << "made by the ctest fixture test fixture_flux_tiny_t5";
    expect_error(sd3::model_args_with("--t5xxl", flux_t5),
                 {"the T5 encoder is 64 wide", "takes 4096"});
}

}  // namespace
