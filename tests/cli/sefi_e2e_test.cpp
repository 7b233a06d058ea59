// SeFi-Image through the CLI, files as users have them (the sefi_tiny golden set of
// tests/golden): -M info names the family for the DiT alone and with its parts; one file with
// all three parts (model.diffusion_model.*, text_encoders.llm.*, first_stage_model.*, as
// stable-diffusion.cpp loads it with -m) is the same model as the split files; the DiT and the
// LLM converted to q8_0 GGUFs (and --type q8_0 on load) stay near the golden image and the
// A1111 parameters name the DiT; another sampler only warns (the reference always runs its own
// dual-time euler); img2img, reference images, --sigmas, a missing LLM or VAE and a
// --prediction are refused before any compute, saying why.
#include <gtest/gtest.h>

#include <filesystem>

#include "../golden/e2e_support.h"
#include "../golden/safetensors_merge.h"
#include "files_support.h"

namespace {

namespace fs = std::filesystem;
namespace e2e = ggdiff::e2e;
using e2e::contains;
using e2e::merge_safetensors;
using e2e::RunResult;

constexpr const char* kFamily = "family:      sefi_image (SeFi-Image)";

std::string tokenizer() {
    return e2e::shared_dir() + "/data/qwen2_synthetic";
}

std::vector<std::string> split_args(const std::string& dit = "", const std::string& llm = "") {
    return {"--diffusion-model",
            dit.empty() ? e2e::built_fixture("sefi_tiny_dit") : dit,
            "--llm",
            llm.empty() ? e2e::built_fixture("flux2_tiny_llm") : llm,
            "--vae",
            e2e::built_fixture("flux2_vae"),
            "--llm-tokenizer",
            tokenizer()};
}

class SefiFiles : public e2e::CaseFiles {
  protected:
    std::string suite() const override { return "sefi_tiny"; }
    std::string case_id() const override { return "sefi_euler"; }
    std::vector<std::string> files() const override {
        return {e2e::built_fixture("sefi_tiny_dit"), e2e::built_fixture("flux2_tiny_llm"),
                e2e::built_fixture("flux2_vae")};
    }
};

TEST_F(SefiFiles, InfoNamesSefiImage) {
    for (const char* flag : {"--diffusion-model", "-m"}) {
        expect_info_names({flag, e2e::built_fixture("sefi_tiny_dit")}, kFamily);
    }
}

// One file with every part, as the reference loads it with -m: the same model as the parts.
TEST_F(SefiFiles, SingleFileIsTheSameModel) {
    const std::string single = dir_ + "/sefi_single.safetensors";
    ASSERT_TRUE(
        merge_safetensors({{e2e::built_fixture("sefi_tiny_dit"),
                            [](const std::string& n) { return "model.diffusion_model." + n; }},
                           {e2e::built_fixture("flux2_tiny_llm"),
                            [](const std::string& n) { return "text_encoders.llm." + n; }},
                           {e2e::built_fixture("flux2_vae"),
                            [](const std::string& n) { return "first_stage_model." + n; }}},
                          single));
    ASSERT_NO_FATAL_FAILURE(expect_info_names({"-m", single}, kFamily));
    const std::string out = dir_ + "/single.png";
    RunResult r = generate({"-m", single, "--llm-tokenizer", tokenizer()}, out);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    e2e::expect_images_near(out, golden(), tolerance(), "single file");
}

// The DiT and the LLM as q8_0 GGUFs, and every part converted on load with --type q8_0, stay
// near the golden image; the A1111 parameters name the DiT file as the model.
TEST_F(SefiFiles, GgufPartsTypeAndMetadata) {
    check_q8_0_gguf_and_type(kFamily, "sefi_tiny_dit", e2e::built_fixture("sefi_tiny_dit"), "--llm",
                             e2e::built_fixture("flux2_tiny_llm"), split_args);
}

// What a newcomer gets wrong, each refused before any compute.
TEST_F(SefiFiles, ClearErrorsForWhatSefiCannotDo) {
    auto with = [](std::vector<std::string> a, std::vector<std::string> extra) {
        a.insert(a.end(), extra.begin(), extra.end());
        return a;
    };
    const std::string init = suite_dir() + "/sefi_euler.png";
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
        {with(split_args(), {"-i", init}), "img2img (-i) is not supported for SeFi-Image"},
        {with(split_args(), {"-r", init}), "--ref-image is not supported for SeFi-Image"},
        {with(split_args(), {"--sigmas", "1,0.5,0"}), "--sigmas is not supported for SeFi-Image"},
        {with(split_args(), {"--prediction", "flux_flow"}),
         "does not apply to SeFi-Image models (they predict sefi_flow)"},
        {e2e::with_flag_value(split_args(), "--llm", ""), "SeFi-Image needs its text encoder"},
        {e2e::with_flag_value(split_args(), "--vae", ""), "SeFi-Image needs the FLUX.2 VAE"},
    };
    int i = 0;
    for (const auto& [args, message] : cases) {
        const std::string out = dir_ + "/refused" + std::to_string(i++) + ".png";
        RunResult r = refused(args, out);
        EXPECT_FALSE(r.succeeded()) << message;
        EXPECT_TRUE(contains(r.err, message)) << r.describe();
        EXPECT_FALSE(fs::exists(out));
    }
}

}  // namespace
