// MiniT2I through the CLI, files as users have them (the minit2i_tiny golden set of
// tests/golden): -M info names the family for the DiT alone and with its T5; the reference's
// single file (model.diffusion_model.model.net.* plus text_encoders.t5xxl.transformer.*, as
// stable-diffusion.cpp loads it with -m) and the DiT with its names unwrapped ("net.*") are the
// same model; the DiT and the T5 converted to q8_0 GGUFs (and --type q8_0 on load) stay near the
// golden image and the A1111 parameters name the DiT; a batch of two carries seeds s and s + 1,
// each the image of its own seed; a missing T5, a VAE, or a --prediction are refused before any
// compute, saying why.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>

#include "../golden/e2e_support.h"
#include "../golden/safetensors_merge.h"
#include "part_files.h"

namespace {

namespace fs = std::filesystem;
namespace e2e = ggdiff::e2e;
using e2e::contains;
using e2e::merge_safetensors;
using e2e::RunResult;

constexpr const char* kSuite = "minit2i_tiny";
constexpr const char* kCase = "minit2i_euler";

std::vector<std::string> split_args(const std::string& dit = "", const std::string& t5 = "") {
    return {"--diffusion-model", dit.empty() ? e2e::built_fixture("minit2i_tiny_dit") : dit,
            "--t5xxl",           t5.empty() ? e2e::built_fixture("flux_tiny_t5") : t5,
            "--t5xxl-tokenizer", e2e::shared_dir() + "/data/t5_synthetic"};
}

class MiniT2IFiles : public ::testing::Test {
  protected:
    void SetUp() override {
        for (const std::string& f : {e2e::binary_path(), e2e::built_fixture("minit2i_tiny_dit"),
                                     e2e::built_fixture("flux_tiny_t5"), golden()}) {
            ASSERT_TRUE(fs::is_regular_file(f))
                << "missing " << f << " (run through ctest: its fixture tests make the files)";
        }
        dir_ = e2e::fresh_dir();
    }

    static std::string suite_dir() { return e2e::repo_suite_dir(kSuite); }
    static std::string golden() { return suite_dir() + "/" + kCase + ".png"; }

    RunResult generate(const std::vector<std::string>& model, const std::string& out,
                       const std::vector<std::string>& extra = {}) const {
        // The case's settings without its --type f32 (there for the reference, which fails on
        // the fixture's f16 mask_token): the files' own types, as users load them.
        std::vector<std::string> args =
            e2e::with_flag_value(e2e::suite_case_args(suite_dir(), kCase), "--type", "");
        args.insert(args.begin(), model.begin(), model.end());
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

TEST_F(MiniT2IFiles, InfoNamesMiniT2I) {
    RunResult alone = e2e::run_ggdiff(
        {"-M", "info", "--diffusion-model", e2e::built_fixture("minit2i_tiny_dit")}, dir_, 60);
    ASSERT_TRUE(alone.succeeded()) << alone.describe();
    EXPECT_TRUE(contains(alone.out, "family:      minit2i (MiniT2I)")) << alone.describe();
    RunResult bare =
        e2e::run_ggdiff({"-M", "info", "-m", e2e::built_fixture("minit2i_tiny_dit")}, dir_, 60);
    ASSERT_TRUE(bare.succeeded()) << bare.describe();
    EXPECT_TRUE(contains(bare.out, "family:      minit2i (MiniT2I)")) << bare.describe();
    std::vector<std::string> all = {"-M", "info"};
    for (const std::string& a : split_args()) all.push_back(a);
    RunResult parts = e2e::run_ggdiff(all, dir_, 60);
    ASSERT_TRUE(parts.succeeded()) << parts.describe();
    EXPECT_TRUE(contains(parts.out, "family:      minit2i (MiniT2I)")) << parts.describe();
}

// One file as the reference loads it with -m, and the DiT's names without "model.": the same
// model as the split files.
TEST_F(MiniT2IFiles, SingleFileAndUnwrappedNamesAreTheSameModel) {
    const std::string single = dir_ + "/minit2i_single.safetensors";
    ASSERT_TRUE(merge_safetensors(
        {{e2e::built_fixture("minit2i_tiny_dit"),
          [](const std::string& n) { return "model.diffusion_model." + n; }},
         {e2e::built_fixture("flux_tiny_t5"),
          [](const std::string& n) { return "text_encoders.t5xxl.transformer." + n; }}},
        single));
    const std::string tok = e2e::shared_dir() + "/data/t5_synthetic";
    const std::string out = dir_ + "/single.png";
    RunResult r = generate({"-m", single, "--t5xxl-tokenizer", tok}, out);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    e2e::expect_images_near(out, golden(), e2e::suite_tolerance(suite_dir()), "single file");

    const std::string net = dir_ + "/minit2i_net.safetensors";
    ASSERT_TRUE(merge_safetensors({{e2e::built_fixture("minit2i_tiny_dit"),
                                    [](const std::string& n) { return n.substr(6); }}},
                                  net));
    RunResult info = e2e::run_ggdiff({"-M", "info", "-m", net}, dir_, 60);
    ASSERT_TRUE(info.succeeded()) << info.describe();
    EXPECT_TRUE(contains(info.out, "family:      minit2i (MiniT2I)")) << info.describe();
    const std::string out2 = dir_ + "/net.png";
    RunResult n = generate(split_args(net), out2);
    ASSERT_TRUE(n.succeeded()) << n.describe();
    e2e::expect_images_near(out2, golden(), e2e::suite_tolerance(suite_dir()), "unwrapped names");
}

// The DiT and the T5 converted to q8_0 GGUFs, and every part converted on load with --type
// q8_0, stay near the golden image; the A1111 parameters name the DiT file as the model.
TEST_F(MiniT2IFiles, GgufPartsTypeAndMetadata) {
    const std::string dit = dir_ + "/minit2i_tiny_dit_q8_0.gguf";
    RunResult c = e2e::convert_part("--diffusion-model", e2e::built_fixture("minit2i_tiny_dit"),
                                    "q8_0", dit, dir_);
    ASSERT_TRUE(c.succeeded()) << c.describe();
    const std::string t5 = dir_ + "/t5_q8_0.gguf";
    RunResult c2 =
        e2e::convert_part("--t5xxl", e2e::built_fixture("flux_tiny_t5"), "q8_0", t5, dir_);
    ASSERT_TRUE(c2.succeeded()) << c2.describe();
    RunResult info = e2e::run_ggdiff({"-M", "info", "--diffusion-model", dit}, dir_, 60);
    ASSERT_TRUE(info.succeeded()) << info.describe();
    EXPECT_TRUE(contains(info.out, "family:      minit2i (MiniT2I)")) << info.describe();
    EXPECT_TRUE(contains(info.out, "q8_0=")) << info.describe();
    const std::string out = dir_ + "/gguf.png";
    RunResult r = generate(split_args(dit, t5), out);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    e2e::expect_images_near(out, golden(), 6.0, "q8_0 GGUF DiT and T5 against the f16 golden");
    auto params = ggdiff::read_image_parameters(out);
    ASSERT_TRUE(params.ok());
    EXPECT_TRUE(contains(*params, "Model: minit2i_tiny_dit_q8_0")) << *params;

    const std::string out2 = dir_ + "/type.png";
    RunResult t = generate(split_args(), out2, {"--type", "q8_0"});
    ASSERT_TRUE(t.succeeded()) << t.describe();
    e2e::expect_images_near(out2, golden(), 6.0, "--type q8_0 against the f16 golden");
}

// -b 2: seeds s and s + 1, each the image its own seed gives alone.
TEST_F(MiniT2IFiles, BatchSeeds) {
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

// What a newcomer gets wrong: no T5, a VAE, a --prediction; each is refused before any compute.
TEST_F(MiniT2IFiles, ClearErrorsForMissingOrWrongParts) {
    RunResult none = refused(e2e::with_flag_value(split_args(), "--t5xxl", ""), dir_ + "/none.png");
    EXPECT_FALSE(none.succeeded());
    EXPECT_TRUE(contains(none.err, "MiniT2I needs its T5 text encoder (google/flan-t5-large)"))
        << none.describe();
    EXPECT_FALSE(fs::exists(dir_ + "/none.png"));

    ASSERT_TRUE(fs::is_regular_file(e2e::built_fixture("flux_ae")));
    std::vector<std::string> vae = split_args();
    vae.insert(vae.end(), {"--vae", e2e::built_fixture("flux_ae")});
    RunResult v = refused(vae, dir_ + "/vae.png");
    EXPECT_FALSE(v.succeeded());
    EXPECT_TRUE(contains(v.err, "MiniT2I works on pixels and has no VAE")) << v.describe();

    std::vector<std::string> pred = split_args();
    pred.insert(pred.end(), {"--prediction", "sd3_flow"});
    RunResult p = refused(pred, dir_ + "/pred.png");
    EXPECT_FALSE(p.succeeded());
    EXPECT_TRUE(contains(p.err, "does not apply to MiniT2I models")) << p.describe();
}

}  // namespace
