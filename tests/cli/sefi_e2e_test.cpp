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
#include "part_files.h"

namespace {

namespace fs = std::filesystem;
namespace e2e = ggdiff::e2e;
using e2e::contains;
using e2e::merge_safetensors;
using e2e::RunResult;

constexpr const char* kSuite = "sefi_tiny";
constexpr const char* kCase = "sefi_euler";
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

class SefiFiles : public ::testing::Test {
  protected:
    void SetUp() override {
        for (const std::string& f :
             {e2e::binary_path(), e2e::built_fixture("sefi_tiny_dit"),
              e2e::built_fixture("flux2_tiny_llm"), e2e::built_fixture("flux2_vae"), golden()}) {
            ASSERT_TRUE(fs::is_regular_file(f))
                << "missing " << f << " (run through ctest: its fixture tests make the files)";
        }
        dir_ = e2e::fresh_dir();
    }

    static std::string suite_dir() { return e2e::repo_suite_dir(kSuite); }
    static std::string golden() { return suite_dir() + "/" + kCase + ".png"; }

    RunResult generate(const std::vector<std::string>& model, const std::string& out,
                       const std::vector<std::string>& extra = {}) const {
        std::vector<std::string> args = e2e::suite_case_args(suite_dir(), kCase);
        args.insert(args.begin(), model.begin(), model.end());
        args.insert(args.end(), extra.begin(), extra.end());
        args.insert(args.end(), {"-o", out});
        return e2e::run_ggdiff(args, dir_, 600);
    }

    RunResult refused(const std::vector<std::string>& model, const std::string& out) const {
        return e2e::run_refused(model, out, dir_);
    }

    std::string dir_;
};

TEST_F(SefiFiles, InfoNamesSefiImage) {
    RunResult alone = e2e::run_ggdiff(
        {"-M", "info", "--diffusion-model", e2e::built_fixture("sefi_tiny_dit")}, dir_, 60);
    ASSERT_TRUE(alone.succeeded()) << alone.describe();
    EXPECT_TRUE(contains(alone.out, kFamily)) << alone.describe();
    RunResult bare =
        e2e::run_ggdiff({"-M", "info", "-m", e2e::built_fixture("sefi_tiny_dit")}, dir_, 60);
    ASSERT_TRUE(bare.succeeded()) << bare.describe();
    EXPECT_TRUE(contains(bare.out, kFamily)) << bare.describe();
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
    RunResult info = e2e::run_ggdiff({"-M", "info", "-m", single}, dir_, 60);
    ASSERT_TRUE(info.succeeded()) << info.describe();
    EXPECT_TRUE(contains(info.out, kFamily)) << info.describe();
    const std::string out = dir_ + "/single.png";
    RunResult r = generate({"-m", single, "--llm-tokenizer", tokenizer()}, out);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    e2e::expect_images_near(out, golden(), e2e::suite_tolerance(suite_dir()), "single file");
}

// The DiT and the LLM as q8_0 GGUFs, and every part converted on load with --type q8_0, stay
// near the golden image; the A1111 parameters name the DiT file as the model.
TEST_F(SefiFiles, GgufPartsTypeAndMetadata) {
    const std::string dit = dir_ + "/sefi_tiny_dit_q8_0.gguf";
    RunResult c = e2e::convert_part("--diffusion-model", e2e::built_fixture("sefi_tiny_dit"),
                                    "q8_0", dit, dir_);
    ASSERT_TRUE(c.succeeded()) << c.describe();
    const std::string llm = dir_ + "/llm_q8_0.gguf";
    RunResult c2 =
        e2e::convert_part("--llm", e2e::built_fixture("flux2_tiny_llm"), "q8_0", llm, dir_);
    ASSERT_TRUE(c2.succeeded()) << c2.describe();
    RunResult info = e2e::run_ggdiff({"-M", "info", "--diffusion-model", dit}, dir_, 60);
    ASSERT_TRUE(info.succeeded()) << info.describe();
    EXPECT_TRUE(contains(info.out, kFamily)) << info.describe();
    const std::string out = dir_ + "/gguf.png";
    RunResult r = generate(split_args(dit, llm), out);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    e2e::expect_images_near(out, golden(), 6.0, "q8_0 GGUF DiT and LLM against the f16 golden");
    auto params = ggdiff::read_image_parameters(out);
    ASSERT_TRUE(params.ok());
    EXPECT_TRUE(contains(*params, "Model: sefi_tiny_dit_q8_0")) << *params;

    const std::string out2 = dir_ + "/type.png";
    RunResult t = generate(split_args(), out2, {"--type", "q8_0"});
    ASSERT_TRUE(t.succeeded()) << t.describe();
    e2e::expect_images_near(out2, golden(), 6.0, "--type q8_0 against the f16 golden");
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
