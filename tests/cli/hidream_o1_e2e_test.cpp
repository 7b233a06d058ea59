// HiDream-O1-Image through the CLI on the tiny fixture (tests/fixtures/hidream_o1_tiny.tensors:
// the real file's names, 4 language-model layers): -M info names the family; the starting noise
// is scaled by eta (8 unless --eta says otherwise, as the reference does); a q8_0 GGUF of the
// file and --type q8_0 stay near the f16 image; the A1111 parameters name the model; what a
// newcomer gets wrong (a size off the 32-pixel patches, -r images, no tokenizer) is refused with
// a message that says why. The real-size golden set is tests/golden/hidream_o1.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>

#include "../golden/e2e_support.h"
#include "image/image_metadata.h"

namespace {

namespace fs = std::filesystem;
namespace e2e = ggdiff::e2e;
using e2e::contains;
using e2e::RunResult;

class HiDreamO1Files : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_TRUE(fs::is_regular_file(e2e::binary_path()));
        ASSERT_TRUE(fs::is_regular_file(model()))
            << "missing " << model() << " (run through ctest: its fixture test makes it)";
        dir_ = e2e::fresh_dir();
    }
    static std::string model() { return e2e::built_fixture("hidream_o1_tiny"); }
    static std::string tokenizer() { return e2e::shared_dir() + "/data/qwen2_synthetic"; }

    RunResult generate(const std::string& file, const std::vector<std::string>& extra,
                       const std::string& out) const {
        std::vector<std::string> args = {"-m",        file,      "--llm-tokenizer",
                                         tokenizer(), "-p",      "a lovely cat",
                                         "-W",        "64",      "-H",
                                         "64",        "--steps", "3",
                                         "-s",        "1",       "-o",
                                         out};
        args.insert(args.end(), extra.begin(), extra.end());
        return e2e::run_ggdiff(args, dir_, 300);
    }
    static double diff(const std::string& a, const std::string& b) {
        const e2e::ImageDiff d = e2e::compare_images(a, b);
        EXPECT_TRUE(d.ok) << d.error;
        std::printf("%s vs %s: mean_abs_diff %.3f\n", fs::path(a).filename().c_str(),
                    fs::path(b).filename().c_str(), d.mean_abs);
        return d.ok ? d.mean_abs : 999.0;
    }

    std::string dir_;
};

TEST_F(HiDreamO1Files, InfoNamesHiDreamO1) {
    RunResult r = e2e::run_ggdiff({"-M", "info", "-m", model()}, dir_, 60);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    EXPECT_TRUE(contains(r.out, "family:      hidream_o1 (HiDream-O1-Image)")) << r.describe();
}

// The default eta is 8 and scales the starting noise: --eta 8 gives the default image, --eta 1
// another one; the default sampler is euler (the log says so).
TEST_F(HiDreamO1Files, EtaScalesTheStartingNoise) {
    const std::string plain = dir_ + "/plain.png", eight = dir_ + "/eta8.png",
                      one = dir_ + "/eta1.png";
    RunResult a = generate(model(), {"-v"}, plain);
    ASSERT_TRUE(a.succeeded()) << a.describe();
    EXPECT_TRUE(contains(a.err, "HiDream-O1-Image")) << a.describe();
    RunResult b = generate(model(), {"--eta", "8"}, eight);
    ASSERT_TRUE(b.succeeded()) << b.describe();
    RunResult c = generate(model(), {"--eta", "1"}, one);
    ASSERT_TRUE(c.succeeded()) << c.describe();
    EXPECT_EQ(diff(plain, eight), 0.0);
    EXPECT_GT(diff(plain, one), 3.0);
    auto params = ggdiff::read_image_parameters(plain);
    ASSERT_TRUE(params.ok());
    EXPECT_TRUE(contains(*params, "Model: hidream_o1_tiny")) << *params;
    EXPECT_TRUE(contains(*params, "Sampler: Euler")) << *params;
}

// The file as a q8_0 GGUF (-M convert) and converted on load (--type q8_0) is still
// HiDream-O1 and stays near the f16 image.
TEST_F(HiDreamO1Files, GgufAndTypeConversion) {
    const std::string gguf = dir_ + "/hidream_o1_tiny_q8_0.gguf";
    RunResult c =
        e2e::run_ggdiff({"-M", "convert", "-m", model(), "--type", "q8_0", "-o", gguf}, dir_, 300);
    ASSERT_TRUE(c.succeeded()) << c.describe();
    RunResult info = e2e::run_ggdiff({"-M", "info", "-m", gguf}, dir_, 60);
    ASSERT_TRUE(info.succeeded()) << info.describe();
    EXPECT_TRUE(contains(info.out, "family:      hidream_o1 (HiDream-O1-Image)"))
        << info.describe();
    EXPECT_TRUE(contains(info.out, "q8_0=")) << info.describe();
    const std::string f16 = dir_ + "/f16.png", q8 = dir_ + "/q8.png", typed = dir_ + "/typed.png";
    ASSERT_TRUE(generate(model(), {}, f16).succeeded());
    RunResult g = generate(gguf, {}, q8);
    ASSERT_TRUE(g.succeeded()) << g.describe();
    EXPECT_LE(diff(f16, q8), 6.0);
    RunResult t = generate(model(), {"--type", "q8_0"}, typed);
    ASSERT_TRUE(t.succeeded()) << t.describe();
    EXPECT_LE(diff(f16, typed), 6.0);
}

// What a newcomer gets wrong: a size that is not whole 32-pixel patches, reference images with
// a file that has no vision tower (the tiny file's tower renamed away) (the edit mode reads them
// with it), no tokenizer.
TEST_F(HiDreamO1Files, ClearErrors) {
    RunResult size = generate(model(), {"-W", "80"}, dir_ + "/size.png");
    EXPECT_FALSE(size.succeeded());
    EXPECT_TRUE(contains(size.err, "32")) << size.describe();
    EXPECT_FALSE(fs::exists(dir_ + "/size.png"));

    // The tiny file with its tower's names changed in place (same header length): no tower.
    const std::string no_tower = dir_ + "/no_tower.safetensors";
    {
        std::ifstream in(model(), std::ios::binary);
        std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        ASSERT_GT(bytes.size(), 8u);
        uint64_t header = 0;
        std::memcpy(&header, bytes.data(), 8);
        for (size_t at = bytes.find("model.visual."); at != std::string::npos && at < 8 + header;
             at = bytes.find("model.visual.", at)) {
            bytes.replace(at, 13, "model.visuaX.");
        }
        std::ofstream(no_tower, std::ios::binary) << bytes;
    }
    const std::string ref = e2e::repo_suite_dir("hidream_o1") + "/ref_stripes.png";
    RunResult edit = generate(no_tower, {"-r", ref}, dir_ + "/edit.png");
    EXPECT_FALSE(edit.succeeded());
    EXPECT_TRUE(contains(edit.err,
                         "vision tower of the model file (model.visual.*), and this "
                         "file has none"))
        << edit.describe();
    EXPECT_FALSE(fs::exists(dir_ + "/edit.png"));

    RunResult none = e2e::run_ggdiff(
        {"-m", model(), "-p", "x", "-W", "64", "-H", "64", "-o", dir_ + "/none.png"}, dir_, 120);
    EXPECT_FALSE(none.succeeded());
    EXPECT_TRUE(contains(none.err, "--llm-tokenizer")) << none.describe();
    EXPECT_FALSE(fs::exists(dir_ + "/none.png"));
}

}  // namespace
