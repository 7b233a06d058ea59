// Krea2 through the CLI, files as users have them (the krea2_tiny golden set of tests/golden):
// -M info names the family for the DiT alone (given as --diffusion-model or bare with -m) and
// with its parts; the reference's single file (model.diffusion_model.* + text_encoders.llm.* +
// first_stage_model.*, as stable-diffusion.cpp loads it with -m) and the DiT in diffusers names
// are the same model; the DiT and the LLM converted to q8_0 GGUFs (and --type q8_0 on load) stay
// near the golden image and the A1111 parameters name the DiT; a batch of two carries seeds s
// and s + 1, each the image of its own seed; a missing or wrong LLM, a wrong VAE and a
// --prediction are refused before any compute, saying what to pass.
#include <gtest/gtest.h>

#include <algorithm>
#include <utility>

#include "../golden/e2e_support.h"
#include "../golden/safetensors_merge.h"
#include "files_support.h"

namespace {

namespace fs = std::filesystem;
namespace e2e = ggdiff::e2e;
using e2e::contains;
using e2e::RunResult;

constexpr const char* kFamily = "family:      krea2 (Krea2)";

std::vector<std::string> split_args(const std::string& dit = "", const std::string& llm = "") {
    return {"--diffusion-model",
            dit.empty() ? e2e::built_fixture("krea2_tiny_dit") : dit,
            "--llm",
            llm.empty() ? e2e::built_fixture("krea2_tiny_llm") : llm,
            "--vae",
            e2e::built_fixture("qwen_vae"),
            "--llm-tokenizer",
            e2e::shared_dir() + "/data/qwen2_synthetic"};
}

// An original DiT name in the diffusers form the reference renames back.
std::string diffusers_name(const std::string& name) {
    static const std::vector<std::pair<std::string, std::string>> prefixes = {
        {"first.", "img_in."},
        {"tmlp.0.", "time_embed.linear_1."},
        {"tmlp.2.", "time_embed.linear_2."},
        {"tproj.1.", "time_mod_proj."},
        {"txtmlp.0.", "txt_in.norm."},
        {"txtmlp.1.", "txt_in.linear_1."},
        {"txtmlp.3.", "txt_in.linear_2."},
        {"txtfusion.", "text_fusion."},
        {"blocks.", "transformer_blocks."},
        {"last.", "final_layer."},
    };
    static const std::vector<std::pair<std::string, std::string>> members = {
        {"attn.wq.", "attn.to_q."},     {"attn.wk.", "attn.to_k."},
        {"attn.wv.", "attn.to_v."},     {"attn.gate.", "attn.to_gate."},
        {"attn.wo.", "attn.to_out.0."}, {"mlp.gate.", "ff.gate."},
        {"mlp.up.", "ff.up."},          {"mlp.down.", "ff.down."},
        {"norm.scale", "norm.weight"},  {"modulation.lin", "modulation.weight"},
    };
    std::string n = name;
    for (const auto& [o, d] : prefixes) {
        if (n.rfind(o, 0) == 0) {
            n = d + n.substr(o.size());
            break;
        }
    }
    for (const auto& [o, d] : members) {
        const size_t at = n.find(o);
        if (at != std::string::npos && (o != "norm.scale" || n.rfind("final_layer.", 0) == 0)) {
            n.replace(at, o.size(), d);
        }
    }
    return n;
}

class Krea2Files : public e2e::CaseFiles {
  protected:
    std::string suite() const override { return "krea2_tiny"; }
    std::string case_id() const override { return "krea2_wide_cfg1"; }  // cfg 1: one pass per step
    std::vector<std::string> files() const override {
        return {e2e::built_fixture("krea2_tiny_dit"), e2e::built_fixture("krea2_tiny_llm"),
                e2e::built_fixture("qwen_vae")};
    }
};

TEST_F(Krea2Files, InfoNamesKrea2) {
    for (const char* flag : {"--diffusion-model", "-m"}) {
        expect_info_names({flag, e2e::built_fixture("krea2_tiny_dit")}, kFamily);
    }
    expect_info_names(split_args(), kFamily);
}

// One file as the reference loads it with -m, and the DiT in diffusers names: the same model as
// the split files.
TEST_F(Krea2Files, SingleFileAndDiffusersNamesAreTheSameModel) {
    const std::string single = dir_ + "/krea2_single.safetensors";
    ASSERT_TRUE(
        e2e::merge_safetensors({{e2e::built_fixture("krea2_tiny_dit"),
                                 [](const std::string& n) { return "model.diffusion_model." + n; }},
                                {e2e::built_fixture("krea2_tiny_llm"),
                                 [](const std::string& n) { return "text_encoders.llm." + n; }},
                                {e2e::built_fixture("qwen_vae"),
                                 [](const std::string& n) { return "first_stage_model." + n; }}},
                               single));
    const std::string tok = e2e::shared_dir() + "/data/qwen2_synthetic";
    const std::string out = dir_ + "/single.png";
    RunResult r = generate({"-m", single, "--llm-tokenizer", tok}, out);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    e2e::expect_images_near(out, golden(), tolerance(), "single file");

    const std::string diffusers = dir_ + "/krea2_diffusers.safetensors";
    ASSERT_TRUE(e2e::merge_safetensors({{e2e::built_fixture("krea2_tiny_dit"), diffusers_name}},
                                       diffusers));
    ASSERT_NO_FATAL_FAILURE(expect_info_names({"-m", diffusers}, kFamily));
    const std::string out2 = dir_ + "/diffusers.png";
    RunResult d = generate(split_args(diffusers), out2);
    ASSERT_TRUE(d.succeeded()) << d.describe();
    EXPECT_TRUE(contains(d.err, "diffusers Krea2 transformer renamed")) << d.describe();
    e2e::expect_images_near(out2, golden(), tolerance(), "diffusers names");
}

// The DiT and the LLM converted to q8_0 GGUFs, and every part converted on load with --type
// q8_0, stay near the golden image; the A1111 parameters name the DiT file as the model.
TEST_F(Krea2Files, GgufPartsTypeAndMetadata) {
    check_q8_0_gguf_and_type(kFamily, "krea2_tiny_dit", e2e::built_fixture("krea2_tiny_dit"),
                             "--llm", e2e::built_fixture("krea2_tiny_llm"), split_args);
}

// -b 2: seeds s and s + 1, each the image its own seed gives alone.
TEST_F(Krea2Files, BatchSeeds) {
    check_batch_seeds(split_args(), 11);
}

// What a newcomer gets wrong: no --llm, an LLM of another width (Anima's 1024-wide Qwen3), FLUX's
// VAE, a --prediction. Each is refused before any compute, saying what to pass.
TEST_F(Krea2Files, ClearErrorsForMissingOrWrongParts) {
    RunResult none = refused(e2e::with_flag_value(split_args(), "--llm", ""), dir_ + "/none.png");
    EXPECT_FALSE(none.succeeded());
    EXPECT_TRUE(contains(none.err, "Krea2 needs its text encoder, Qwen3-VL-4B's language model"))
        << none.describe();
    EXPECT_FALSE(fs::exists(dir_ + "/none.png"));

    ASSERT_TRUE(fs::is_regular_file(e2e::built_fixture("anima_tiny_llm")));
    RunResult w =
        refused(e2e::with_flag_value(split_args(), "--llm", e2e::built_fixture("anima_tiny_llm")),
                dir_ + "/wrong.png");
    EXPECT_FALSE(w.succeeded());
    EXPECT_TRUE(contains(w.err,
                         "--llm: a Qwen3 1024 wide with 1 layers (0 of the states Krea2 "
                         "stacks); the Krea2 DiT reads 4 states 320 wide"))
        << w.describe();
    EXPECT_FALSE(fs::exists(dir_ + "/wrong.png"));

    ASSERT_TRUE(fs::is_regular_file(e2e::built_fixture("flux_ae")));
    RunResult v =
        refused(e2e::with_flag_value(split_args(), "--vae", e2e::built_fixture("flux_ae")),
                dir_ + "/vae.png");
    EXPECT_FALSE(v.succeeded());
    EXPECT_TRUE(contains(v.err, "Krea2 needs the Wan 2.1 VAE: pass --vae")) << v.describe();

    std::vector<std::string> pred = split_args();
    pred.insert(pred.end(), {"--prediction", "sd3_flow"});
    RunResult p = refused(pred, dir_ + "/pred.png");
    EXPECT_FALSE(p.succeeded());
    EXPECT_TRUE(contains(p.err, "does not apply to Krea2 models (they predict flux_flow)"))
        << p.describe();
}

}  // namespace
