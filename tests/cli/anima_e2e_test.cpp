// Anima through the CLI, files as users have them (the anima_tiny golden set of tests/golden):
// -M info names the family for the DiT alone and with its parts; the DiT with its names
// unwrapped (no "net.", as some conversions store them) is the same model; the DiT as a q8_0
// GGUF (and --type q8_0 on load) stays near the golden image and the A1111 parameters name
// it; a missing or wrong text encoder, VAE or T5 tokenizer gets an error that says what to
// pass.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>

#include "../golden/e2e_support.h"

namespace {

namespace fs = std::filesystem;
namespace e2e = ggdiff::e2e;
using e2e::contains;
using e2e::RunResult;

constexpr const char* kSuite = "anima_tiny";
constexpr const char* kCase = "anima_euler";

// The fixture as split files: the DiT, Qwen3 text encoder and Wan 2.1 VAE, and the synthetic
// tokenizers (Qwen2 BPE and T5's, which the LLM adapter's token ids come from).
std::vector<std::string> anima_args(const std::string& dit = "") {
    return {"--diffusion-model",
            dit.empty() ? e2e::built_fixture("anima_tiny_dit") : dit,
            "--llm",
            e2e::built_fixture("anima_tiny_llm"),
            "--vae",
            e2e::built_fixture("qwen_vae"),
            "--llm-tokenizer",
            e2e::shared_dir() + "/data/qwen2_synthetic",
            "--t5xxl-tokenizer",
            e2e::shared_dir() + "/data/t5_synthetic"};
}

// `in` (safetensors) written to `out` with every tensor name passed through `rename`.
bool rename_safetensors(const std::string& in, const std::string& out,
                        const std::function<std::string(const std::string&)>& rename) {
    std::ifstream f(in, std::ios::binary);
    uint64_t n = 0;
    if (!f.read(reinterpret_cast<char*>(&n), 8)) return false;
    std::string header(n, '\0');
    if (!f.read(header.data(), static_cast<std::streamsize>(n))) return false;
    const nlohmann::json h = nlohmann::json::parse(header, nullptr, false);
    if (h.is_discarded()) return false;
    nlohmann::json renamed = nlohmann::json::object();
    for (const auto& [name, value] : h.items()) {
        renamed[name == "__metadata__" ? name : rename(name)] = value;
    }
    std::string text = renamed.dump();
    text.append((8 - text.size() % 8) % 8, ' ');
    std::ofstream o(out, std::ios::binary);
    const uint64_t m = text.size();
    o.write(reinterpret_cast<const char*>(&m), 8);
    o.write(text.data(), static_cast<std::streamsize>(text.size()));
    o << f.rdbuf();
    return static_cast<bool>(o);
}

class AnimaFiles : public ::testing::Test {
  protected:
    void SetUp() override {
        for (const std::string& f :
             {e2e::binary_path(), e2e::built_fixture("anima_tiny_dit"),
              e2e::built_fixture("anima_tiny_llm"), e2e::built_fixture("qwen_vae"), golden()}) {
            ASSERT_TRUE(fs::is_regular_file(f))
                << "missing " << f << " (run through ctest: its fixture tests make the files)";
        }
        dir_ = e2e::fresh_dir();
    }

    static std::string suite_dir() { return e2e::repo_suite_dir(kSuite); }
    static std::string golden() { return suite_dir() + "/" + kCase + ".png"; }

    RunResult generate(const std::vector<std::string>& model, const std::string& out) const {
        std::vector<std::string> args = model;
        for (const std::string& a : e2e::suite_case_args(suite_dir(), kCase)) args.push_back(a);
        args.insert(args.end(), {"-o", out});
        return e2e::run_ggdiff(args, dir_, 600);
    }

    // A request that fails before any compute: `model` with a tiny image.
    RunResult refused(const std::vector<std::string>& model, const std::string& out) const {
        return e2e::run_refused(model, out, dir_);
    }

    std::string dir_;
};

TEST_F(AnimaFiles, InfoNamesAnima) {
    RunResult alone = e2e::run_ggdiff(
        {"-M", "info", "--diffusion-model", e2e::built_fixture("anima_tiny_dit")}, dir_, 60);
    ASSERT_TRUE(alone.succeeded()) << alone.describe();
    EXPECT_TRUE(contains(alone.out, "family:      anima (Anima)")) << alone.describe();
    std::vector<std::string> all = {"-M", "info"};
    for (const std::string& a : anima_args()) all.push_back(a);
    RunResult parts = e2e::run_ggdiff(all, dir_, 60);
    ASSERT_TRUE(parts.succeeded()) << parts.describe();
    EXPECT_TRUE(contains(parts.out, "family:      anima (Anima)")) << parts.describe();
}

// The DiT's names without the "net." wrapper, given with -m (a bare DiT): the same model.
TEST_F(AnimaFiles, UnwrappedNamesAreTheSameModel) {
    const std::string bare = dir_ + "/anima_bare.safetensors";
    ASSERT_TRUE(rename_safetensors(
        e2e::built_fixture("anima_tiny_dit"), bare,
        [](const std::string& n) { return n.rfind("net.", 0) == 0 ? n.substr(4) : n; }));
    RunResult info = e2e::run_ggdiff({"-M", "info", "-m", bare}, dir_, 60);
    ASSERT_TRUE(info.succeeded()) << info.describe();
    EXPECT_TRUE(contains(info.out, "family:      anima (Anima)")) << info.describe();
    std::vector<std::string> args = e2e::with_flag_value(anima_args(), "--diffusion-model", "");
    args.insert(args.begin(), {"-m", bare});
    const std::string out = dir_ + "/bare.png";
    RunResult r = generate(args, out);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    e2e::expect_images_near(out, golden(), e2e::suite_tolerance(suite_dir()), "unwrapped names");
}

// The DiT converted to a q8_0 GGUF, and every part converted on load with --type q8_0, stay
// near the golden image; the A1111 parameters name the DiT file as the model.
TEST_F(AnimaFiles, GgufDitTypeAndMetadata) {
    const std::string gguf = dir_ + "/anima_tiny_dit_q8_0.gguf";
    RunResult c =
        e2e::run_ggdiff({"-M", "convert", "--diffusion-model", e2e::built_fixture("anima_tiny_dit"),
                         "--type", "q8_0", "-o", gguf},
                        dir_, 300);
    ASSERT_TRUE(c.succeeded()) << c.describe();
    RunResult info = e2e::run_ggdiff({"-M", "info", "--diffusion-model", gguf}, dir_, 60);
    ASSERT_TRUE(info.succeeded()) << info.describe();
    EXPECT_TRUE(contains(info.out, "family:      anima (Anima)")) << info.describe();
    EXPECT_TRUE(contains(info.out, "q8_0=")) << info.describe();
    const std::string out = dir_ + "/gguf.png";
    RunResult r = generate(anima_args(gguf), out);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    e2e::expect_images_near(out, golden(), 6.0, "q8_0 GGUF DiT against the f16 golden");
    auto params = ggdiff::read_image_parameters(out);
    ASSERT_TRUE(params.ok());
    EXPECT_TRUE(contains(*params, "Model: anima_tiny_dit_q8_0")) << *params;

    std::vector<std::string> typed = anima_args();
    typed.insert(typed.end(), {"--type", "q8_0"});
    const std::string out2 = dir_ + "/type.png";
    RunResult t = generate(typed, out2);
    ASSERT_TRUE(t.succeeded()) << t.describe();
    e2e::expect_images_near(out2, golden(), 6.0, "--type q8_0 against the f16 golden");
}

// What a newcomer gets wrong: no --llm, an LLM of another width (Z-Image's 512-wide test
// Qwen3), FLUX's VAE, no T5 tokenizer. Each is refused before any compute, saying what to pass.
TEST_F(AnimaFiles, ClearErrorsForMissingOrWrongParts) {
    RunResult none = refused(e2e::with_flag_value(anima_args(), "--llm", ""), dir_ + "/none.png");
    EXPECT_FALSE(none.succeeded());
    EXPECT_TRUE(contains(none.err, "Anima needs its Qwen3 text encoder: pass --llm"))
        << none.describe();
    EXPECT_FALSE(fs::exists(dir_ + "/none.png"));

    ASSERT_TRUE(fs::is_regular_file(e2e::built_fixture("zimage_tiny_llm")));
    RunResult w =
        refused(e2e::with_flag_value(anima_args(), "--llm", e2e::built_fixture("zimage_tiny_llm")),
                dir_ + "/wrong.png");
    EXPECT_FALSE(w.succeeded());
    EXPECT_TRUE(contains(w.err,
                         "a Qwen3 512 wide; Anima's LLM adapter reads Qwen3-0.6B's "
                         "1024-wide states"))
        << w.describe();
    EXPECT_FALSE(fs::exists(dir_ + "/wrong.png"));

    ASSERT_TRUE(fs::is_regular_file(e2e::built_fixture("flux_ae")));
    RunResult v =
        refused(e2e::with_flag_value(anima_args(), "--vae", e2e::built_fixture("flux_ae")),
                dir_ + "/vae.png");
    EXPECT_FALSE(v.succeeded());
    EXPECT_TRUE(contains(v.err, "Anima needs the Wan 2.1 VAE: pass --vae")) << v.describe();

    RunResult t =
        refused(e2e::with_flag_value(anima_args(), "--t5xxl-tokenizer", ""), dir_ + "/t5.png");
    EXPECT_FALSE(t.succeeded());
    EXPECT_TRUE(contains(t.err, "--t5xxl-tokenizer")) << t.describe();
    EXPECT_TRUE(contains(t.err, "Anima's LLM adapter")) << t.describe();
}

}  // namespace
