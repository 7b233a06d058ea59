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
#include "files_support.h"

namespace {

namespace fs = std::filesystem;
namespace e2e = ggdiff::e2e;
using e2e::contains;
using e2e::RunResult;

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

class BooguFiles : public e2e::CaseFiles {
  protected:
    std::string suite() const override { return "boogu_tiny"; }
    std::string case_id() const override { return "boogu_default"; }
    std::vector<std::string> files() const override {
        return {e2e::built_fixture("boogu_tiny_dit"), e2e::built_fixture("zimage_tiny_llm"),
                e2e::built_fixture("flux_ae")};
    }
};

TEST_F(BooguFiles, InfoNamesBoogu) {
    for (const char* flag : {"--diffusion-model", "-m"}) {
        expect_info_names({flag, e2e::built_fixture("boogu_tiny_dit")}, kFamily);
    }
    expect_info_names(split_args(), kFamily);
}

// One file as the reference loads it with -m: the same model as the split files.
TEST_F(BooguFiles, SingleFileIsTheSameModel) {
    const std::string single = dir_ + "/boogu_single.safetensors";
    ASSERT_TRUE(e2e::merge_safetensors(
        {{e2e::built_fixture("boogu_tiny_dit"), prefixed("model.diffusion_model.")},
         {e2e::built_fixture("zimage_tiny_llm"), prefixed("text_encoders.llm.")},
         {e2e::built_fixture("flux_ae"), prefixed("first_stage_model.")}},
        single));
    ASSERT_NO_FATAL_FAILURE(expect_info_names({"-m", single}, kFamily));
    const std::string out = dir_ + "/single.png";
    RunResult r = generate({"-m", single, "--llm-tokenizer", tokenizer()}, out);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    e2e::expect_images_near(out, golden(), tolerance(), "single file");
}

// The DiT and the LLM converted to q8_0 GGUFs, and every part converted on load with --type
// q8_0, stay near the golden image; the A1111 parameters name the DiT file as the model.
TEST_F(BooguFiles, GgufPartsTypeAndMetadata) {
    check_q8_0_gguf_and_type(kFamily, "boogu_tiny_dit", e2e::built_fixture("boogu_tiny_dit"),
                             "--llm", e2e::built_fixture("zimage_tiny_llm"), split_args);
}

// -b 2: seeds s and s + 1, each the image its own seed gives alone.
TEST_F(BooguFiles, BatchSeeds) {
    check_batch_seeds(split_args(), 42);
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
    edit.insert(edit.end(), {"-r", suite_dir() + "/ref_stripes.png"});
    RunResult r = refused(edit, dir_ + "/edit.png");
    EXPECT_FALSE(r.succeeded());
    EXPECT_TRUE(contains(r.err, "not Qwen3-VL's (no visual.pos_embed.weight)")) << r.describe();
    EXPECT_FALSE(fs::exists(dir_ + "/edit.png"));
}

}  // namespace
