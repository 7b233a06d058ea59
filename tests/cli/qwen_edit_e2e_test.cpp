// Qwen Image Edit through the CLI, files as users have them: -M info names the family; the DiT
// and the LLM (its vision tower included) converted to q8_0 GGUF, and --type q8_0 on load, stay
// near the golden image; the vision tower as a separate --llm_vision file (HF names with and
// without "visual.", llama.cpp mmproj names) gives the golden image; a text-only LLM warns and
// the text encoder no longer sees the reference; 2511's zero_cond_t from the flag or from
// ComfyUI's marker tensor, against the reference engine's image; clear errors for a foreign
// vision tower, a file without one and a truncated one.
#include <gtest/gtest.h>

#include <map>

#include "../golden/qwen_edit_e2e.h"

namespace {

namespace fs = std::filesystem;
namespace e2e = ggdiff::e2e;
namespace qe = ggdiff::e2e::qwen_edit;
using e2e::contains;
using e2e::RunResult;

constexpr const char* kCase = "qedit_ref1";

// Re-packaged fixture files of one test, written on first use into its folder by
// tests/tools/qwen_edit_layouts.py.
class Layouts {
  public:
    void set_dir(const std::string& dir) { dir_ = dir; }
    // The LLM without its vision tower.
    const std::string& text_llm() {
        if (text_.empty()) {
            const std::string t = dir_ + "/text_llm.safetensors";
            const std::string v = dir_ + "/vision_visual.safetensors";
            if (qe::run_layouts({"split", qe::llm(), t, v, "visual"})) {
                text_ = t;
                vision_["visual"] = v;
            }
        }
        return text_;
    }
    // The vision tower alone, named the `naming` way (visual, bare, mmproj).
    std::string vision(const std::string& naming) {
        if (!vision_.count(naming)) {
            const std::string v = dir_ + "/vision_" + naming + ".safetensors";
            if (qe::run_layouts({"split", qe::llm(), "-", v, naming})) vision_[naming] = v;
        }
        return vision_.count(naming) ? vision_[naming] : "";
    }

  private:
    std::string dir_, text_;
    std::map<std::string, std::string> vision_;
};

class QwenEditFiles : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_TRUE(qe::prerequisites_ok());
        ASSERT_FALSE(qe::case_args(kCase).empty()) << "no case " << kCase;
        dir_ = e2e::fresh_dir();
        files_.set_dir(dir_);
    }

    // ggdiff with `model`, the golden case `id`, `extra` and -o OUT.
    RunResult generate(const std::vector<std::string>& model, const std::string& out,
                       const std::vector<std::string>& extra = {}, const char* id = kCase) {
        std::vector<std::string> args = model;
        for (const std::string& a : qe::case_args(id)) args.push_back(a);
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
        if (d.ok) std::printf("%s vs %s: mean_abs_diff %.3f\n", a.c_str(), b.c_str(), d.mean_abs);
        return d.ok ? d.mean_abs : 0.0;
    }

    // The model arguments with the text-only LLM and `vision` as --llm_vision.
    std::vector<std::string> split_model(const std::string& vision) {
        std::vector<std::string> m = qe::model_args_with("--llm", files_.text_llm());
        m.insert(m.end(), {"--llm_vision", vision});
        return m;
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
    Layouts files_;
};

TEST_F(QwenEditFiles, InfoNamesQwenImage) {
    RunResult alone = e2e::run_ggdiff({"-M", "info", "--diffusion-model", qe::dit()}, dir_, 60);
    ASSERT_TRUE(alone.succeeded()) << alone.describe();
    EXPECT_TRUE(contains(alone.out, "family:      qwen_image (Qwen Image)")) << alone.describe();
    std::vector<std::string> all = {"-M", "info"};
    for (const std::string& a : qe::model_args()) all.push_back(a);
    RunResult parts = e2e::run_ggdiff(all, dir_, 60);
    ASSERT_TRUE(parts.succeeded()) << parts.describe();
    EXPECT_TRUE(contains(parts.out, "family:      qwen_image (Qwen Image)")) << parts.describe();
    for (const std::string& f : {qe::dit(), qe::llm(), qe::vae()})
        EXPECT_TRUE(contains(parts.out, "file:        " + f)) << parts.describe();
}

// The DiT and the LLM (with its visual.* tensors) converted to q8_0 GGUF load through the same
// flags, the vision tower still reads the reference (no warning), and the image stays near the
// f16 golden; --type q8_0 on load likewise.
TEST_F(QwenEditFiles, GgufQ8PartsAndTypeConversion) {
    std::vector<std::string> model = qe::model_args();
    for (const auto& [flag, file] : std::vector<std::pair<std::string, std::string>>{
             {"--diffusion-model", qe::dit()}, {"--llm", qe::llm()}}) {
        const std::string gguf = dir_ + "/" + fs::path(file).stem().string() + ".gguf";
        RunResult c =
            e2e::run_ggdiff({"-M", "convert", flag, file, "-o", gguf, "--type", "q8_0"}, dir_, 600);
        ASSERT_TRUE(c.succeeded()) << c.describe();
        model = e2e::with_flag_value(model, flag, gguf);
    }
    std::vector<std::string> info = {"-M", "info"};
    info.insert(info.end(), model.begin(), model.end());
    RunResult i = e2e::run_ggdiff(info, dir_, 60);
    ASSERT_TRUE(i.succeeded()) << i.describe();
    EXPECT_TRUE(contains(i.out, "family:      qwen_image (Qwen Image)")) << i.describe();
    EXPECT_TRUE(contains(i.out, "q8_0=")) << i.describe();
    const std::string a = dir_ + "/gguf.png";
    RunResult r = generate(model, a);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    EXPECT_FALSE(contains(r.err, "no vision tower")) << r.describe();
    // Measured 1.96 here and 1.91 for --type q8_0 (f16: about 0.5): q8_0 weights move this
    // fixture by about 2 of 255, so the limit is 4.
    expect_close(a, qe::ref1_golden(), 4.0, "GGUF DiT + LLM q8_0");

    const std::string q8 = dir_ + "/q8.png";
    RunResult t = generate(qe::model_args(), q8, {"--type", "q8_0"});
    ASSERT_TRUE(t.succeeded()) << t.describe();
    expect_close(q8, qe::ref1_golden(), 4.0, "--type q8_0 against the f16 golden");
}

// The vision tower as its own file next to a text-only LLM, named as HF stores it (with and
// without "visual.") and as a llama.cpp mmproj (fused qkv split, Conv3d patch embed as two
// Conv2d time slices): each gives the golden image.
TEST_F(QwenEditFiles, SeparateVisionFileInEveryNaming) {
    ASSERT_FALSE(files_.text_llm().empty());
    for (const char* naming : {"visual", "bare", "mmproj"}) {
        const std::string vision = files_.vision(naming);
        ASSERT_FALSE(vision.empty()) << naming;
        const std::string out = dir_ + "/" + naming + ".png";
        RunResult r = generate(split_model(vision), out);
        ASSERT_TRUE(r.succeeded()) << r.describe();
        EXPECT_FALSE(contains(r.err, "no vision tower")) << r.describe();
        expect_close(out, qe::ref1_golden(), qe::tolerance(),
                     std::string("--llm_vision, ") + naming + " names");
    }
    // A file without a vision tower (the VAE) is not taken for one.
    expect_error(split_model(qe::vae()), {"--llm_vision", qe::vae(), "no Qwen2.5-VL vision tower"});
}

// Without a vision tower the request still runs (references reach the DiT only), warns, and the
// image is not the golden one: the text encoder did not see the reference.
TEST_F(QwenEditFiles, TextOnlyLlmWarnsAndDiffers) {
    const std::string text = files_.text_llm();
    ASSERT_FALSE(text.empty());
    const std::string out = dir_ + "/text_only.png";
    RunResult r = generate(qe::model_args_with("--llm", text), out);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    EXPECT_TRUE(contains(r.err, "no vision tower")) << r.describe();
    EXPECT_GT(mean_diff(out, qe::ref1_golden()), 3.0)
        << "the image is the edit image although the text encoder could not read the reference";
}

// 2511: --qwen-image-zero-cond-t changes the image and matches the reference engine's
// (the repository's qwen_edit_2511 golden set); a ComfyUI-style DiT file (names under
// model.diffusion_model.) with the "__index_timestep_zero__" marker gives the same image
// without the flag, and -v says so.
TEST_F(QwenEditFiles, ZeroCondTFromFlagOrMarker) {
    const std::string flag = dir_ + "/flag.png", marker = dir_ + "/marker.png";
    RunResult a = generate(qe::model_args(), flag, {"--qwen-image-zero-cond-t"});
    ASSERT_TRUE(a.succeeded()) << a.describe();
    EXPECT_GT(mean_diff(flag, qe::ref1_golden()), 3.0) << "zero_cond_t changed nothing";
    expect_close(flag, qe::suite_2511_dir() + "/qedit2511_ref1.png", 1.5,
                 "--qwen-image-zero-cond-t against the reference engine");

    const std::string dit = dir_ + "/dit_2511.safetensors";
    ASSERT_TRUE(qe::run_layouts({"zero_cond", qe::dit(), dit}));
    RunResult b = generate(qe::model_args_with("--diffusion-model", dit), marker, {"-v"});
    ASSERT_TRUE(b.succeeded()) << b.describe();
    EXPECT_TRUE(contains(b.err, "timestep 0 (2511)")) << b.describe();
    EXPECT_LT(mean_diff(marker, flag), 0.01) << "the marker tensor is not the flag";
    fs::remove(dit);
}

// A vision tower of another LLM (its merger gives rows of another width), a file without one and
// a truncated one: clear errors that name what is wrong.
TEST_F(QwenEditFiles, BadVisionFilesAreErrors) {
    const std::string narrow = dir_ + "/vision_narrow.safetensors";
    ASSERT_TRUE(qe::run_layouts({"narrow_merger", qe::llm(), narrow, "2048"}));
    expect_error(split_model(narrow), {"2048", "3584", "not this LLM's vision tower"});

    const std::string vision = files_.vision("visual");
    ASSERT_FALSE(vision.empty());
    const std::string cut = dir_ + "/vision_truncated.safetensors";
    fs::copy_file(vision, cut);
    fs::resize_file(cut, fs::file_size(vision) / 2);
    expect_error(split_model(cut), {cut});
}

}  // namespace
