// Boogu Image through the CLI, files as users have them (the boogu_tiny golden set of
// tests/golden): -M info names the family for the DiT alone (also given with -m: a bare DiT) and
// with its parts; the reference's single file (model.diffusion_model.*, text_encoders.llm.*,
// first_stage_model.*, as stable-diffusion.cpp loads it with -m) is the same model as the split
// files; the DiT converted to a q8_0 GGUF (and --type q8_0 on load) stays near the golden image
// and the A1111 parameters name it; a batch of two carries seeds s and s + 1, each the image of
// its own seed; a missing or wrong text encoder or VAE, another --prediction, and -r with an LLM
// file that has a vision tower, are refused before any compute, saying why.
#include <gtest/gtest.h>

#include <algorithm>

#include "../golden/e2e_support.h"
#include "../golden/safetensors_merge.h"
#include "part_files.h"

namespace {

namespace fs = std::filesystem;
namespace e2e = ggdiff::e2e;
using e2e::contains;
using e2e::RunResult;

constexpr const char* kSuite = "boogu_tiny";
constexpr const char* kCase = "boogu_default";
constexpr const char* kFamily = "family:      boogu_image (Boogu Image)";

std::string tokenizer() {
    return e2e::shared_dir() + "/data/qwen2_synthetic";
}

std::vector<std::string> split_args(const std::string& dit = "", const std::string& llm = "") {
    return {"--diffusion-model",
            dit.empty() ? e2e::built_fixture("boogu_tiny_dit") : dit,
            "--llm",
            llm.empty() ? e2e::built_fixture("zimage_tiny_llm") : llm,
            "--vae",
            e2e::built_fixture("flux_ae"),
            "--llm-tokenizer",
            tokenizer()};
}

std::function<std::string(const std::string&)> prefixed(const std::string& prefix) {
    return [prefix](const std::string& n) { return prefix + n; };
}

class BooguFiles : public ::testing::Test {
  protected:
    void SetUp() override {
        for (const std::string& f :
             {e2e::binary_path(), e2e::built_fixture("boogu_tiny_dit"),
              e2e::built_fixture("zimage_tiny_llm"), e2e::built_fixture("flux_ae"), golden()}) {
            ASSERT_TRUE(fs::is_regular_file(f))
                << "missing " << f << " (run through ctest: its fixture tests make the files)";
        }
        dir_ = e2e::fresh_dir();
    }

    static std::string suite_dir() { return e2e::repo_suite_dir(kSuite); }
    static std::string golden() { return suite_dir() + "/" + kCase + ".png"; }

    RunResult generate(const std::vector<std::string>& model, const std::string& out,
                       const std::vector<std::string>& extra = {}) const {
        std::vector<std::string> args = model;
        for (const std::string& a : e2e::suite_case_args(suite_dir(), kCase)) args.push_back(a);
        args.insert(args.end(), extra.begin(), extra.end());
        args.insert(args.end(), {"-o", out});
        return e2e::run_ggdiff(args, dir_, 600);
    }

    // A request that fails before any compute: `model` with a tiny image.
    RunResult refused(const std::vector<std::string>& model, const std::string& out) const {
        return e2e::run_refused(model, out, dir_);
    }

    std::string dir_;
};

TEST_F(BooguFiles, InfoNamesBoogu) {
    for (const char* flag : {"--diffusion-model", "-m"}) {
        RunResult alone =
            e2e::run_ggdiff({"-M", "info", flag, e2e::built_fixture("boogu_tiny_dit")}, dir_, 60);
        ASSERT_TRUE(alone.succeeded()) << alone.describe();
        EXPECT_TRUE(contains(alone.out, kFamily)) << alone.describe();
    }
    std::vector<std::string> all = {"-M", "info"};
    for (const std::string& a : split_args()) all.push_back(a);
    RunResult parts = e2e::run_ggdiff(all, dir_, 60);
    ASSERT_TRUE(parts.succeeded()) << parts.describe();
    EXPECT_TRUE(contains(parts.out, kFamily)) << parts.describe();
}

// One file as the reference loads it with -m: the same model as the split files.
TEST_F(BooguFiles, SingleFileIsTheSameModel) {
    const std::string single = dir_ + "/boogu_single.safetensors";
    ASSERT_TRUE(e2e::merge_safetensors(
        {{e2e::built_fixture("boogu_tiny_dit"), prefixed("model.diffusion_model.")},
         {e2e::built_fixture("zimage_tiny_llm"), prefixed("text_encoders.llm.")},
         {e2e::built_fixture("flux_ae"), prefixed("first_stage_model.")}},
        single));
    RunResult info = e2e::run_ggdiff({"-M", "info", "-m", single}, dir_, 60);
    ASSERT_TRUE(info.succeeded()) << info.describe();
    EXPECT_TRUE(contains(info.out, kFamily)) << info.describe();
    const std::string out = dir_ + "/single.png";
    RunResult r = generate({"-m", single, "--llm-tokenizer", tokenizer()}, out);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    e2e::expect_images_near(out, golden(), e2e::suite_tolerance(suite_dir()), "single file");
}

// The DiT and the LLM converted to q8_0 GGUFs, and every part converted on load with --type
// q8_0, stay near the golden image; the A1111 parameters name the DiT file as the model.
TEST_F(BooguFiles, GgufPartsTypeAndMetadata) {
    const std::string dit = dir_ + "/boogu_tiny_dit_q8_0.gguf";
    RunResult c = e2e::convert_part("--diffusion-model", e2e::built_fixture("boogu_tiny_dit"),
                                    "q8_0", dit, dir_);
    ASSERT_TRUE(c.succeeded()) << c.describe();
    const std::string llm = dir_ + "/llm_q8_0.gguf";
    RunResult c2 =
        e2e::convert_part("--llm", e2e::built_fixture("zimage_tiny_llm"), "q8_0", llm, dir_);
    ASSERT_TRUE(c2.succeeded()) << c2.describe();
    RunResult info = e2e::run_ggdiff({"-M", "info", "--diffusion-model", dit}, dir_, 60);
    ASSERT_TRUE(info.succeeded()) << info.describe();
    EXPECT_TRUE(contains(info.out, kFamily)) << info.describe();
    EXPECT_TRUE(contains(info.out, "q8_0=")) << info.describe();
    const std::string out = dir_ + "/gguf.png";
    RunResult r = generate(split_args(dit, llm), out);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    e2e::expect_images_near(out, golden(), 6.0, "q8_0 GGUF DiT and LLM against the f16 golden");
    auto params = ggdiff::read_image_parameters(out);
    ASSERT_TRUE(params.ok());
    EXPECT_TRUE(contains(*params, "Model: boogu_tiny_dit_q8_0")) << *params;

    const std::string out2 = dir_ + "/type.png";
    RunResult t = generate(split_args(), out2, {"--type", "q8_0"});
    ASSERT_TRUE(t.succeeded()) << t.describe();
    e2e::expect_images_near(out2, golden(), 6.0, "--type q8_0 against the f16 golden");
}

// -b 2: seeds s and s + 1, each the image its own seed gives alone.
TEST_F(BooguFiles, BatchSeeds) {
    const std::string out = dir_ + "/batch.png";
    RunResult b = generate(split_args(), out, {"-b", "2"});
    ASSERT_TRUE(b.succeeded()) << b.describe();
    const std::vector<std::string> pngs = e2e::pngs_in(dir_);
    ASSERT_EQ(pngs.size(), 2u) << b.describe();
    e2e::expect_images_near(pngs[0], golden(), e2e::suite_tolerance(suite_dir()),
                            "batch image 1 (seed 42)");
    auto p2 = ggdiff::read_image_parameters(pngs[1]);
    ASSERT_TRUE(p2.ok());
    EXPECT_TRUE(contains(*p2, "Seed: 43")) << *p2;
    const std::string alone = dir_ + "/seed43/alone.png";
    fs::create_directories(dir_ + "/seed43");
    RunResult s = generate(split_args(), alone, {"-s", "43"});
    ASSERT_TRUE(s.succeeded()) << s.describe();
    e2e::expect_images_near(pngs[1], alone, 0.5, "batch image 2 against seed 43 alone");
}

// What a newcomer gets wrong: no --llm, a Qwen2-type LLM, no VAE, a --prediction other than
// sd3_flow, and -r with an LLM file that has a vision tower (read by the reference, not yet by
// ggdiff); each is refused before any compute.
TEST_F(BooguFiles, ClearErrorsForMissingOrWrongParts) {
    RunResult none = refused(e2e::with_flag_value(split_args(), "--llm", ""), dir_ + "/none.png");
    EXPECT_FALSE(none.succeeded());
    EXPECT_TRUE(contains(none.err, "Boogu Image needs its Qwen3-VL text encoder: pass --llm"))
        << none.describe();
    EXPECT_FALSE(fs::exists(dir_ + "/none.png"));

    ASSERT_TRUE(fs::is_regular_file(e2e::built_fixture("qwen_tiny_llm")));
    RunResult w = refused(split_args("", e2e::built_fixture("qwen_tiny_llm")), dir_ + "/w.png");
    EXPECT_FALSE(w.succeeded());
    EXPECT_TRUE(contains(w.err, "--llm: a Qwen2-type LLM")) << w.describe();

    RunResult v = refused(e2e::with_flag_value(split_args(), "--vae", ""), dir_ + "/vae.png");
    EXPECT_FALSE(v.succeeded());
    EXPECT_TRUE(contains(v.err, "Boogu Image needs the 16-channel FLUX VAE")) << v.describe();

    std::vector<std::string> pred = split_args();
    pred.insert(pred.end(), {"--prediction", "flux_flow"});
    RunResult p = refused(pred, dir_ + "/pred.png");
    EXPECT_FALSE(p.succeeded());
    EXPECT_TRUE(contains(p.err, "does not apply to Boogu Image models")) << p.describe();

    // The LLM file with a stand-in vision tower that is not Qwen3-VL's: text-to-image runs, -r
    // is refused (the Qwen3-VL tower itself is the golden set's boogu_vision_* cases).
    const std::string vl = dir_ + "/qwen3_vl.safetensors";
    ASSERT_TRUE(e2e::merge_safetensors(
        {{e2e::built_fixture("zimage_tiny_llm"), [](const std::string& n) { return n; }},
         {e2e::built_fixture("zimage_tiny_llm"),
          [](const std::string& n) { return "model.visual." + n.substr(n.find('.') + 1); }}},
        vl));
    std::vector<std::string> edit = split_args("", vl);
    edit.insert(edit.end(), {"-r", e2e::repo_suite_dir(kSuite) + "/ref_stripes.png"});
    RunResult r = refused(edit, dir_ + "/edit.png");
    EXPECT_FALSE(r.succeeded());
    EXPECT_TRUE(contains(r.err, "not Qwen3-VL's (no visual.pos_embed.weight)")) << r.describe();
    EXPECT_FALSE(fs::exists(dir_ + "/edit.png"));
}

}  // namespace
