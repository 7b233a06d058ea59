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
#include "files_support.h"

namespace {

namespace fs = std::filesystem;
namespace e2e = ggdiff::e2e;
using e2e::contains;
using e2e::merge_safetensors;
using e2e::RunResult;

constexpr const char* kFamily = "family:      minit2i (MiniT2I)";

std::vector<std::string> split_args(const std::string& dit = "", const std::string& t5 = "") {
    return {"--diffusion-model", dit.empty() ? e2e::built_fixture("minit2i_tiny_dit") : dit,
            "--t5xxl",           t5.empty() ? e2e::built_fixture("flux_tiny_t5") : t5,
            "--t5xxl-tokenizer", e2e::shared_dir() + "/data/t5_synthetic"};
}

class MiniT2IFiles : public e2e::CaseFiles {
  protected:
    std::string suite() const override { return "minit2i_tiny"; }
    std::string case_id() const override { return "minit2i_euler"; }
    std::vector<std::string> files() const override {
        return {e2e::built_fixture("minit2i_tiny_dit"), e2e::built_fixture("flux_tiny_t5")};
    }
    // The case's settings without its --type f32 (there for the reference, which fails on the
    // fixture's f16 mask_token): the files' own types, as users load them.
    std::vector<std::string> case_args() const override {
        return e2e::with_flag_value(CaseFiles::case_args(), "--type", "");
    }
};

TEST_F(MiniT2IFiles, InfoNamesMiniT2I) {
    for (const char* flag : {"--diffusion-model", "-m"}) {
        expect_info_names({flag, e2e::built_fixture("minit2i_tiny_dit")}, kFamily);
    }
    expect_info_names(split_args(), kFamily);
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
    e2e::expect_images_near(out, golden(), tolerance(), "single file");

    const std::string net = dir_ + "/minit2i_net.safetensors";
    ASSERT_TRUE(merge_safetensors({{e2e::built_fixture("minit2i_tiny_dit"),
                                    [](const std::string& n) { return n.substr(6); }}},
                                  net));
    ASSERT_NO_FATAL_FAILURE(expect_info_names({"-m", net}, kFamily));
    const std::string out2 = dir_ + "/net.png";
    RunResult n = generate(split_args(net), out2);
    ASSERT_TRUE(n.succeeded()) << n.describe();
    e2e::expect_images_near(out2, golden(), tolerance(), "unwrapped names");
}

// The DiT and the T5 converted to q8_0 GGUFs, and every part converted on load with --type
// q8_0, stay near the golden image; the A1111 parameters name the DiT file as the model.
TEST_F(MiniT2IFiles, GgufPartsTypeAndMetadata) {
    check_q8_0_gguf_and_type(kFamily, "minit2i_tiny_dit", e2e::built_fixture("minit2i_tiny_dit"),
                             "--t5xxl", e2e::built_fixture("flux_tiny_t5"), split_args);
}

// -b 2: seeds s and s + 1, each the image its own seed gives alone.
TEST_F(MiniT2IFiles, BatchSeeds) {
    check_batch_seeds(split_args(), 42);
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
