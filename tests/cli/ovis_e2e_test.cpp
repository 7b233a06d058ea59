// Ovis-Image through the CLI, files as users have them (the ovis_tiny golden set of
// tests/golden): -M info names the family for the DiT alone and for its parts; the DiT as a
// q8_0 GGUF (and --type q8_0 on load) is still Ovis-Image and stays near the golden image; the
// A1111 parameters name the model; an LLM of another width and a missing text encoder get
// errors that say what to pass.
#include <gtest/gtest.h>

#include "llm_flux_files.h"

namespace {

namespace fs = std::filesystem;
namespace e2e = ggdiff::e2e;
using e2e::contains;
using e2e::RunResult;

class OvisFiles : public e2e::LlmFluxFiles {
  protected:
    OvisFiles() : LlmFluxFiles("ovis_tiny", "ovis_tiny_dit", "zimage_tiny_llm", "ovis_euler") {}
};

TEST_F(OvisFiles, InfoNamesOvisImage) {
    RunResult alone = e2e::run_ggdiff({"-M", "info", "--diffusion-model", dit()}, dir_, 60);
    ASSERT_TRUE(alone.succeeded()) << alone.describe();
    EXPECT_TRUE(contains(alone.out, "family:      ovis_image (Ovis-Image)")) << alone.describe();
    std::vector<std::string> all = {"-M", "info"};
    for (const std::string& a : model_args()) all.push_back(a);
    RunResult parts = e2e::run_ggdiff(all, dir_, 60);
    ASSERT_TRUE(parts.succeeded()) << parts.describe();
    EXPECT_TRUE(contains(parts.out, "family:      ovis_image (Ovis-Image)")) << parts.describe();
}

// The DiT converted to a q8_0 GGUF, and every part converted on load with --type q8_0, stay
// near the golden image; the A1111 parameters of the PNG name the DiT file as the model.
TEST_F(OvisFiles, GgufDitTypeAndMetadata) {
    const std::string gguf = dir_ + "/ovis_tiny_dit_q8_0.gguf";
    RunResult c = e2e::run_ggdiff(
        {"-M", "convert", "--diffusion-model", dit(), "--type", "q8_0", "-o", gguf}, dir_, 300);
    ASSERT_TRUE(c.succeeded()) << c.describe();
    RunResult info = e2e::run_ggdiff({"-M", "info", "--diffusion-model", gguf}, dir_, 60);
    ASSERT_TRUE(info.succeeded()) << info.describe();
    EXPECT_TRUE(contains(info.out, "family:      ovis_image (Ovis-Image)")) << info.describe();
    EXPECT_TRUE(contains(info.out, "q8_0=")) << info.describe();
    const std::string out = dir_ + "/gguf.png";
    RunResult r = generate(model_args(gguf), out);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    expect_same(out, golden(), 6.0, "q8_0 GGUF DiT against the f16 golden");
    auto params = ggdiff::read_image_parameters(out);
    ASSERT_TRUE(params.ok());
    EXPECT_TRUE(contains(*params, "Model: ovis_tiny_dit_q8_0")) << *params;

    std::vector<std::string> typed = model_args();
    typed.insert(typed.end(), {"--type", "q8_0"});
    const std::string out2 = dir_ + "/type.png";
    RunResult t = generate(typed, out2);
    ASSERT_TRUE(t.succeeded()) << t.describe();
    expect_same(out2, golden(), 6.0, "--type q8_0 against the f16 golden");
}

// What a newcomer gets wrong: no --llm, or an LLM of another width (LongCat's Qwen2.5-VL).
TEST_F(OvisFiles, ClearErrorsForMissingOrWrongTextEncoder) {
    RunResult none =
        e2e::run_ggdiff({"--diffusion-model", dit(), "--vae", e2e::built_fixture("flux_ae"), "-p",
                         "x", "-W", "64", "-H", "64", "-o", dir_ + "/none.png"},
                        dir_, 120);
    EXPECT_FALSE(none.succeeded());
    EXPECT_TRUE(contains(none.err, "Ovis-Image needs its text encoder")) << none.describe();
    EXPECT_TRUE(contains(none.err, "--llm")) << none.describe();
    EXPECT_FALSE(fs::exists(dir_ + "/none.png"));

    ASSERT_TRUE(fs::is_regular_file(e2e::built_fixture("qwen_tiny_llm")));
    std::vector<std::string> wrong =
        e2e::with_flag_value(model_args(), "--llm", e2e::built_fixture("qwen_tiny_llm"));
    wrong.insert(wrong.end(), {"-p", "x", "-W", "64", "-H", "64", "-o", dir_ + "/wrong.png"});
    RunResult w = e2e::run_ggdiff(wrong, dir_, 120);
    EXPECT_FALSE(w.succeeded());
    EXPECT_TRUE(contains(w.err, "the text encoder is 3584 wide, the DiT's txt_in takes 512"))
        << w.describe();
    EXPECT_FALSE(fs::exists(dir_ + "/wrong.png"));
}

}  // namespace
