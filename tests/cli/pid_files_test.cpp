// PiD's files as users have them (the pid_tiny golden set of tests/golden): the three split
// parts (--diffusion-model or -m for the DiT, --llm, --vae) give the golden image; the DiT and
// the Gemma LLM converted to q8_0 GGUFs by -M convert are still PiD for -M info, stay near the
// golden image and the A1111 parameters name the DiT; --type q8_0 on load stays near it too; a
// missing, unreadable or wrong part is refused before any compute, saying what to pass.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>

#include "../golden/e2e_support.h"
#include "part_files.h"

namespace {

namespace fs = std::filesystem;
namespace e2e = ggdiff::e2e;
using e2e::contains;
using e2e::RunResult;

constexpr const char* kCase = "pid_euler";  // cfg 1: one pass per step

std::string suite_dir() {
    return e2e::repo_suite_dir("pid_tiny");
}
std::string golden() {
    return suite_dir() + "/" + kCase + ".png";
}
std::string dit_file() {
    return std::string(GGDIFF_BINARY_DIR) + "/fixtures/pid_tiny_dit.gguf";
}

std::vector<std::string> split_args(const std::string& dit = "", const std::string& llm = "") {
    return {"--diffusion-model",
            dit.empty() ? dit_file() : dit,
            "--llm",
            llm.empty() ? e2e::built_fixture("pid_tiny_llm") : llm,
            "--vae",
            e2e::built_fixture("flux_ae")};
}

class PidPartFiles : public ::testing::Test {
  protected:
    void SetUp() override {
        for (const std::string& f :
             {e2e::binary_path(), dit_file(), e2e::built_fixture("pid_tiny_llm"),
              e2e::built_fixture("flux_ae"), golden()}) {
            ASSERT_TRUE(fs::is_regular_file(f))
                << "missing " << f << " (run through ctest: its fixture tests make the files)";
        }
        dir_ = e2e::fresh_dir();
    }

    // The golden case's arguments (with `extra`, whose flags replace the case's) on `model`.
    RunResult generate(const std::vector<std::string>& model, const std::string& out,
                       const std::vector<std::string>& extra = {}) const {
        std::vector<std::string> args = e2e::suite_case_args(suite_dir(), kCase);
        for (size_t i = 0; i + 1 < extra.size(); i += 2) {
            args = e2e::with_flag_value(args, extra[i], extra[i + 1]);
            if (std::find(args.begin(), args.end(), extra[i]) == args.end()) {
                args.insert(args.end(), {extra[i], extra[i + 1]});
            }
        }
        args.insert(args.begin(), model.begin(), model.end());
        args.insert(args.end(), {"-o", out});
        return e2e::run_ggdiff(args, dir_, 600);
    }

    // A request that must fail before any compute, with `message` in its error.
    void expect_refused(std::vector<std::string> model, const std::string& message) const {
        model.insert(model.end(), {"-r", suite_dir() + "/ref_stripes.png", "--llm-tokenizer",
                                   suite_dir() + "/gemma2_tokenizer.json"});
        const std::string out = dir_ + "/refused.png";
        RunResult r = e2e::run_refused(model, out, dir_);
        EXPECT_TRUE(r.failed_cleanly()) << r.describe();
        EXPECT_TRUE(contains(r.err, message)) << message << "\n" << r.describe();
        EXPECT_FALSE(fs::exists(out));
    }

    std::string dir_;
};

// The DiT given bare with -m next to --llm and --vae is the same model as --diffusion-model.
TEST_F(PidPartFiles, DitAsMainModelGivesTheGolden) {
    std::vector<std::string> model = split_args();
    model[0] = "-m";
    const std::string out = dir_ + "/m.png";
    RunResult r = generate(model, out);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    e2e::expect_images_near(out, golden(), e2e::suite_tolerance(suite_dir()), "-m DiT");
}

// The DiT and the LLM converted to q8_0 GGUFs: -M info still says PiD (and q8_0), the sparse
// DiT's zero blocks stay holes on disk, the image stays near the golden (the goldens run
// --type f32) and its parameters name the DiT; every part converted on load with --type q8_0
// stays near it as well.
TEST_F(PidPartFiles, GgufPartsAndTypeQ8) {
    const std::string dit = dir_ + "/pid_tiny_dit_q8_0.gguf";
    RunResult c = e2e::convert_part("--diffusion-model", dit_file(), "q8_0", dit, dir_);
    ASSERT_TRUE(c.succeeded()) << c.describe();
    const std::string llm = dir_ + "/gemma_q8_0.gguf";
    RunResult c2 =
        e2e::convert_part("--llm", e2e::built_fixture("pid_tiny_llm"), "q8_0", llm, dir_);
    ASSERT_TRUE(c2.succeeded()) << c2.describe();
    struct stat st;
    ASSERT_EQ(::stat(dit.c_str(), &st), 0);
    EXPECT_LT(static_cast<double>(st.st_blocks) * 512, 0.5 * static_cast<double>(st.st_size))
        << "the converted DiT's zero blocks should be holes";

    RunResult info = e2e::run_ggdiff({"-M", "info", "--diffusion-model", dit}, dir_, 60);
    ASSERT_TRUE(info.succeeded()) << info.describe();
    EXPECT_TRUE(contains(info.out, "family:      pid (PiD)")) << info.describe();
    EXPECT_TRUE(contains(info.out, "q8_0=")) << info.describe();

    const std::string out = dir_ + "/gguf.png";
    RunResult r = generate(split_args(dit, llm), out);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    e2e::expect_images_near(out, golden(), 3.0, "q8_0 GGUF DiT and LLM against the golden");
    auto params = ggdiff::read_image_parameters(out);
    ASSERT_TRUE(params.ok());
    EXPECT_TRUE(contains(*params, "Model: pid_tiny_dit_q8_0")) << *params;

    const std::string out2 = dir_ + "/type.png";
    RunResult t = generate(split_args(), out2, {"--type", "q8_0"});
    ASSERT_TRUE(t.succeeded()) << t.describe();
    e2e::expect_images_near(out2, golden(), 3.0, "--type q8_0 against the golden");
}

// What a newcomer gets wrong, each refused before any compute saying what to pass: no --llm, a
// --llm that is not there, a Qwen3 as --llm, Wan's VAE as --vae, a DiT file that is not there,
// a --prediction.
TEST_F(PidPartFiles, ClearErrorsForMissingOrWrongParts) {
    expect_refused(e2e::with_flag_value(split_args(), "--llm", ""),
                   "PiD needs its Gemma 2 2B text encoder: pass --llm");
    expect_refused(e2e::with_flag_value(split_args(), "--llm", dir_ + "/nope.safetensors"),
                   "--llm: " + dir_ + "/nope.safetensors: cannot open");
    ASSERT_TRUE(fs::is_regular_file(e2e::built_fixture("krea2_tiny_llm")));
    expect_refused(
        e2e::with_flag_value(split_args(), "--llm", e2e::built_fixture("krea2_tiny_llm")),
        "this is not a Gemma 2 model");
    ASSERT_TRUE(fs::is_regular_file(e2e::built_fixture("qwen_vae")));
    expect_refused(e2e::with_flag_value(split_args(), "--vae", e2e::built_fixture("qwen_vae")),
                   "--vae: PiD takes the VAE its checkpoint was trained on (FLUX.1's "
                   "ae.safetensors, the SD3 VAE or flux2-vae.safetensors)");
    expect_refused(e2e::with_flag_value(split_args(), "--diffusion-model", dir_ + "/nope.gguf"),
                   dir_ + "/nope.gguf");
    std::vector<std::string> pred = split_args();
    pred.insert(pred.end(), {"--prediction", "eps"});
    expect_refused(pred, "--prediction eps does not apply to PiD models (they predict sd3_flow)");
}

}  // namespace
