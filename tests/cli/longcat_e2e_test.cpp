// LongCat-Image through the CLI, files as users have them (the longcat_tiny golden set of
// tests/golden): Comfy-Org's DiT file (q/k norms named .weight) and a diffusers
// LongCatImagePipeline folder (tokenizer included) give the same image as the original names;
// the DiT as a q8_0 GGUF is still LongCat and stays near the golden image; the A1111 parameters
// name the model; an LLM of another width and a missing text encoder get errors that say what
// to pass.
#include <gtest/gtest.h>

#include "llm_flux_files.h"

namespace {

namespace fs = std::filesystem;
namespace e2e = ggdiff::e2e;
using e2e::contains;
using e2e::RunResult;

std::string tokenizer_dir() {
    return e2e::shared_dir() + "/data/qwen2_synthetic";
}
std::string layouts_tool() {
    return "/usr/bin/python3 '" + std::string(GGDIFF_SOURCE_DIR) + "/tests/tools/flux_layouts.py'";
}

class LongCatFiles : public e2e::LlmFluxFiles {
  protected:
    LongCatFiles()
        : LlmFluxFiles("longcat_tiny", "longcat_tiny_dit", "qwen_tiny_llm", "longcat_euler") {}

    // The image of the original files, made once per test.
    std::string original() {
        const std::string out = dir_ + "/original.png";
        if (!fs::exists(out)) {
            RunResult r = generate(model_args(), out);
            EXPECT_TRUE(r.succeeded()) << r.describe();
        }
        return out;
    }
};

// Comfy-Org's LongCat file stores the q/k RMSNorm weights as ".weight": renamed to FLUX's
// ".scale", the same weights give the same image.
TEST_F(LongCatFiles, ComfyNormNamesGiveTheSameImage) {
    const std::string comfy = dir_ + "/longcat_comfy.safetensors";
    const std::string cmd = layouts_tool() + " longcat-comfy '" + comfy + "' '" + dit() + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    RunResult info = e2e::run_ggdiff({"-M", "info", "--diffusion-model", comfy}, dir_, 60);
    ASSERT_TRUE(info.succeeded()) << info.describe();
    EXPECT_TRUE(contains(info.out, "family:      longcat (LongCat-Image)")) << info.describe();
    const std::string out = dir_ + "/comfy.png";
    RunResult r = generate(model_args(comfy), out);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    expect_same(out, original(), 0.0, "Comfy-Org norm names");
    expect_same(out, golden(), e2e::suite_tolerance(suite_dir()), "against the golden image");
}

// A diffusers LongCatImagePipeline folder (transformer/ in diffusers names with norm_out's
// (scale, shift) order, text_encoder/, vae/, tokenizer/) is LongCat and gives the original
// files' image, with no tokenizer flag.
TEST_F(LongCatFiles, DiffusersPipelineFolder) {
    const std::string folder = dir_ + "/LongCat-Image-tiny";
    const std::string cmd = layouts_tool() + " longcat-diffusers '" + folder + "' '" + dit() +
                            "' '" + e2e::built_fixture("qwen_tiny_llm") + "' '" +
                            e2e::built_fixture("flux_ae") + "' '" + tokenizer_dir() + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    RunResult info = e2e::run_ggdiff({"-M", "info", "-m", folder}, dir_, 60);
    ASSERT_TRUE(info.succeeded()) << info.describe();
    EXPECT_TRUE(contains(info.out, "family:      longcat (LongCat-Image)")) << info.describe();
    const std::string out = dir_ + "/diffusers.png";
    RunResult r = generate({"-m", folder}, out);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    // The folder's tensors are laid out as diffusers stores them (split q/k/v, the diffusers
    // VAE) and reach partly other kernels: on an AVX-512 machine a few pixels came out one
    // level apart (mean 0.004, max 1; 0.000 elsewhere), so "the same image" allows that and no
    // more (a wrong mapping moves it by whole levels everywhere).
    expect_same(out, original(), 0.05, "diffusers LongCatImagePipeline folder");
}

// The DiT converted to a q8_0 GGUF is still LongCat and stays near the golden image; the A1111
// parameters of the PNG name the DiT file as the model.
TEST_F(LongCatFiles, GgufDitAndMetadata) {
    const std::string gguf = dir_ + "/longcat_tiny_dit_q8_0.gguf";
    RunResult c = e2e::run_ggdiff(
        {"-M", "convert", "--diffusion-model", dit(), "--type", "q8_0", "-o", gguf}, dir_, 300);
    ASSERT_TRUE(c.succeeded()) << c.describe();
    RunResult info = e2e::run_ggdiff({"-M", "info", "--diffusion-model", gguf}, dir_, 60);
    ASSERT_TRUE(info.succeeded()) << info.describe();
    EXPECT_TRUE(contains(info.out, "family:      longcat (LongCat-Image)")) << info.describe();
    EXPECT_TRUE(contains(info.out, "q8_0=")) << info.describe();
    const std::string out = dir_ + "/gguf.png";
    RunResult r = generate(model_args(gguf), out);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    expect_same(out, golden(), 6.0, "q8_0 GGUF DiT against the f16 golden");
    auto params = ggdiff::read_image_parameters(out);
    ASSERT_TRUE(params.ok());
    EXPECT_TRUE(contains(*params, "Model: longcat_tiny_dit_q8_0")) << *params;
}

// What a newcomer gets wrong: no --llm, or an LLM of another width.
TEST_F(LongCatFiles, ClearErrorsForMissingOrWrongTextEncoder) {
    RunResult none =
        e2e::run_ggdiff({"--diffusion-model", dit(), "--vae", e2e::built_fixture("flux_ae"), "-p",
                         "x", "-W", "64", "-H", "64", "-o", dir_ + "/none.png"},
                        dir_, 120);
    EXPECT_FALSE(none.succeeded());
    EXPECT_TRUE(contains(none.err, "LongCat-Image needs its text encoder")) << none.describe();
    EXPECT_TRUE(contains(none.err, "--llm")) << none.describe();
    EXPECT_FALSE(fs::exists(dir_ + "/none.png"));

    // Z-Image's Qwen3 text encoder fixture is 512 wide.
    std::vector<std::string> wrong =
        e2e::with_flag_value(model_args(), "--llm", e2e::built_fixture("zimage_tiny_llm"));
    ASSERT_TRUE(fs::is_regular_file(e2e::built_fixture("zimage_tiny_llm")));
    wrong.insert(wrong.end(), {"-p", "x", "-W", "64", "-H", "64", "-o", dir_ + "/wrong.png"});
    RunResult w = e2e::run_ggdiff(wrong, dir_, 120);
    EXPECT_FALSE(w.succeeded());
    EXPECT_TRUE(contains(w.err, "the text encoder is 512 wide, the DiT's txt_in takes 3584"))
        << w.describe();
    EXPECT_FALSE(fs::exists(dir_ + "/wrong.png"));
}

}  // namespace
