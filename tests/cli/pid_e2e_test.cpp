// PiD through the CLI on the pid_tiny golden set's files (tests/golden/pid_tiny): -M info names
// the family for the DiT alone (as --diffusion-model and bare with -m) and with its parts; what
// PiD cannot run is refused before any compute, saying why: no -r image, an -i image,
// --img-cfg-scale, a --vae-format whose VAE is not the one given, a missing Gemma tokenizer (the
// error says where it looked), a missing VAE.
#include <gtest/gtest.h>

#include "../golden/e2e_support.h"

namespace {

namespace fs = std::filesystem;
namespace e2e = ggdiff::e2e;
using e2e::contains;
using e2e::RunResult;

std::string dit() {
    return std::string(GGDIFF_BINARY_DIR) + "/fixtures/pid_tiny_dit.gguf";
}
std::string suite_dir() {
    return e2e::repo_suite_dir("pid_tiny");
}

std::vector<std::string> parts(bool tokenizer = true) {
    std::vector<std::string> a = {
        "--diffusion-model",          dit(), "--llm", e2e::built_fixture("pid_tiny_llm"), "--vae",
        e2e::built_fixture("flux_ae")};
    if (tokenizer) a.insert(a.end(), {"--llm-tokenizer", suite_dir() + "/gemma2_tokenizer.json"});
    return a;
}

class PidFiles : public ::testing::Test {
  protected:
    void SetUp() override {
        for (const std::string& f : {e2e::binary_path(), dit(), e2e::built_fixture("pid_tiny_llm"),
                                     e2e::built_fixture("flux_ae")}) {
            ASSERT_TRUE(fs::is_regular_file(f))
                << "missing " << f << " (run through ctest: its fixture tests make the files)";
        }
        dir_ = e2e::fresh_dir();
    }

    // A request that must fail before any compute, with `message` in its error.
    void expect_refused(std::vector<std::string> args, const std::string& message) const {
        args.insert(args.end(), {"-p", "x", "-W", "64", "-H", "64", "-o", dir_ + "/x.png"});
        RunResult r = e2e::run_ggdiff(args, dir_, 120);
        EXPECT_TRUE(r.failed_cleanly()) << r.describe();
        EXPECT_TRUE(contains(r.out + r.err, message)) << message << "\n" << r.describe();
        EXPECT_FALSE(fs::exists(dir_ + "/x.png"));
    }

    std::string ref() const { return suite_dir() + "/ref_stripes.png"; }
    std::string dir_;
};

TEST_F(PidFiles, InfoNamesPiD) {
    for (const std::vector<std::string>& files :
         {std::vector<std::string>{"--diffusion-model", dit()},
          std::vector<std::string>{"-m", dit()}, parts(false)}) {
        std::vector<std::string> args = {"-M", "info"};
        args.insert(args.end(), files.begin(), files.end());
        RunResult r = e2e::run_ggdiff(args, dir_, 60);
        ASSERT_TRUE(r.succeeded()) << r.describe();
        EXPECT_TRUE(contains(r.out, "family:      pid (PiD)")) << r.describe();
    }
}

TEST_F(PidFiles, RefusesWhatItCannotRun) {
    std::vector<std::string> a = parts();
    expect_refused(a, "PiD needs a reference image (-r / --ref-image)");
    a.insert(a.end(), {"-r", ref()});
    std::vector<std::string> b = a;
    b.insert(b.end(), {"-i", ref()});
    expect_refused(b, "PiD img2img (-i) is not supported");
    b = a;
    b.insert(b.end(), {"--img-cfg-scale", "2"});
    expect_refused(b, "--img-cfg-scale is not supported for PiD");
    b = a;
    b.insert(b.end(), {"--vae-format", "flux2"});
    expect_refused(b, "--vae-format flux2 takes a 32-channel one");
    b = a;
    b.insert(b.end(), {"--vae-format", "diffusers"});
    expect_refused(b, "--vae-format");
}

TEST_F(PidFiles, SaysWhereItLookedForTheTokenizer) {
    // The LLM copied to a folder without a tokenizer.json.
    const std::string llm = dir_ + "/gemma.safetensors";
    fs::copy_file(e2e::built_fixture("pid_tiny_llm"), llm);
    std::vector<std::string> a = parts(false);
    for (size_t i = 0; i + 1 < a.size(); ++i) {
        if (a[i] == "--llm") a[i + 1] = llm;
    }
    a.insert(a.end(), {"-r", ref()});
    expect_refused(a, "no tokenizer found for the Gemma text encoder");
    expect_refused(a, "looked in " + dir_);
}

TEST_F(PidFiles, NeedsItsVae) {
    std::vector<std::string> a = {"--diffusion-model",
                                  dit(),
                                  "--llm",
                                  e2e::built_fixture("pid_tiny_llm"),
                                  "--llm-tokenizer",
                                  suite_dir() + "/gemma2_tokenizer.json",
                                  "-r",
                                  ref()};
    expect_refused(a, "PiD needs the VAE its checkpoint was trained on");
}

}  // namespace
