// Ideogram 4 through the CLI, files as users have them (the ideogram4_tiny golden set of
// tests/golden, sparse GGUFs at the real widths): -M info names the family for the DiT alone
// (given as --diffusion-model or bare with -m) and with its parts, and for the unconditional DiT
// alone (--uncond-diffusion-model) with its bytes, which --fit-dry-run counts in the diffusion
// component; the DiT converted to a q8_0
// GGUF (and --type q8_0 on load) stays near the golden image and the A1111 parameters name the
// DiT; a batch of two carries seeds s and s + 1, each the image of its own seed; the negative
// prompt is said to have no effect; a missing or wrong LLM, a missing VAE, a --prediction and
// --uncond-diffusion-model for another family are refused before any compute, saying what to
// pass.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../golden/e2e_support.h"
#include "part_files.h"

namespace {

namespace fs = std::filesystem;
namespace e2e = ggdiff::e2e;
using e2e::contains;
using e2e::RunResult;

constexpr const char* kSuite = "ideogram4_tiny";
constexpr const char* kCase = "ideogram4_wide_json";  // cfg 1, 2 steps: one pass per step

std::string gguf(const std::string& stem) {
    return std::string(GGDIFF_BINARY_DIR) + "/fixtures/" + stem + ".gguf";
}

std::vector<std::string> split_args(const std::string& dit = "") {
    return {"--diffusion-model",
            dit.empty() ? gguf("ideogram4_tiny_dit") : dit,
            "--llm",
            gguf("ideogram4_tiny_llm"),
            "--vae",
            e2e::built_fixture("flux2_vae"),
            "--llm-tokenizer",
            e2e::shared_dir() + "/data/qwen2_synthetic"};
}

class Ideogram4Files : public ::testing::Test {
  protected:
    void SetUp() override {
        for (const std::string& f :
             {e2e::binary_path(), gguf("ideogram4_tiny_dit"), gguf("ideogram4_tiny_llm"),
              e2e::built_fixture("flux2_vae"), golden()}) {
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

TEST_F(Ideogram4Files, InfoNamesIdeogram4) {
    const std::string family = "family:      ideogram4 (Ideogram 4)";
    for (const char* flag : {"--diffusion-model", "-m"}) {
        RunResult alone =
            e2e::run_ggdiff({"-M", "info", flag, gguf("ideogram4_tiny_dit")}, dir_, 60);
        ASSERT_TRUE(alone.succeeded()) << alone.describe();
        EXPECT_TRUE(contains(alone.out, family)) << alone.describe();
    }
    std::vector<std::string> all = {"-M", "info"};
    for (const std::string& a : split_args()) all.push_back(a);
    RunResult parts = e2e::run_ggdiff(all, dir_, 60);
    ASSERT_TRUE(parts.succeeded()) << parts.describe();
    EXPECT_TRUE(contains(parts.out, family)) << parts.describe();
}

// The DiT converted to a q8_0 GGUF, and every part converted on load with --type q8_0, stay near
// the golden image; the A1111 parameters name the DiT file as the model.
TEST_F(Ideogram4Files, GgufPartTypeAndMetadata) {
    const std::string dit = dir_ + "/ideogram4_tiny_dit_q8_0.gguf";
    RunResult c =
        e2e::convert_part("--diffusion-model", gguf("ideogram4_tiny_dit"), "q8_0", dit, dir_);
    ASSERT_TRUE(c.succeeded()) << c.describe();
    RunResult info = e2e::run_ggdiff({"-M", "info", "--diffusion-model", dit}, dir_, 60);
    ASSERT_TRUE(info.succeeded()) << info.describe();
    EXPECT_TRUE(contains(info.out, "family:      ideogram4 (Ideogram 4)")) << info.describe();
    EXPECT_TRUE(contains(info.out, "q8_0=")) << info.describe();
    const std::string out = dir_ + "/gguf.png";
    RunResult r = generate(split_args(dit), out);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    e2e::expect_images_near(out, golden(), 6.0, "q8_0 GGUF DiT against the golden");
    auto params = ggdiff::read_image_parameters(out);
    ASSERT_TRUE(params.ok());
    EXPECT_TRUE(contains(*params, "Model: ideogram4_tiny_dit_q8_0")) << *params;

    const std::string out2 = dir_ + "/type.png";
    RunResult t = generate(split_args(), out2, {"--type", "q8_0"});
    ASSERT_TRUE(t.succeeded()) << t.describe();
    e2e::expect_images_near(out2, golden(), 6.0, "--type q8_0 against the golden");
}

// -b 2: seeds s and s + 1, each the image its own seed gives alone.
TEST_F(Ideogram4Files, BatchSeeds) {
    const std::string out = dir_ + "/batch.png";
    RunResult b = generate(split_args(), out, {"-b", "2"});
    ASSERT_TRUE(b.succeeded()) << b.describe();
    const std::vector<std::string> pngs = e2e::pngs_in(dir_);
    ASSERT_EQ(pngs.size(), 2u) << b.describe();
    e2e::expect_images_near(pngs[0], golden(), e2e::suite_tolerance(suite_dir()),
                            "batch image 1 (seed 11)");
    auto p2 = ggdiff::read_image_parameters(pngs[1]);
    ASSERT_TRUE(p2.ok());
    EXPECT_TRUE(contains(*p2, "Seed: 12")) << *p2;
    fs::create_directories(dir_ + "/seed12");
    const std::string alone = dir_ + "/seed12/alone.png";
    RunResult s = generate(split_args(), alone, {"-s", "12"});
    ASSERT_TRUE(s.succeeded()) << s.describe();
    e2e::expect_images_near(pngs[1], alone, 0.5, "batch image 2 against seed 12 alone");
}

// The unconditional pass has no text: a negative prompt changes nothing, and says so.
TEST_F(Ideogram4Files, NegativePromptHasNoEffect) {
    const std::string out = dir_ + "/neg.png";
    RunResult r = generate(split_args(), out, {"--cfg-scale", "3", "-n", "blurry"});
    ASSERT_TRUE(r.succeeded()) << r.describe();
    EXPECT_TRUE(contains(r.err, "the negative prompt has no effect")) << r.describe();
    fs::create_directories(dir_ + "/plain");
    const std::string plain = dir_ + "/plain/plain.png";
    RunResult p = generate(split_args(), plain, {"--cfg-scale", "3"});
    ASSERT_TRUE(p.succeeded()) << p.describe();
    e2e::expect_images_near(out, plain, 0.01, "-n against no negative prompt");
}

// What a newcomer gets wrong: no --llm, an LLM of another width (Krea2's), no VAE, a
// --prediction, an unconditional DiT for a family without one. Each is refused before any
// compute, saying what to pass.
TEST_F(Ideogram4Files, ClearErrorsForMissingOrWrongParts) {
    RunResult none = refused(e2e::with_flag_value(split_args(), "--llm", ""), dir_ + "/none.png");
    EXPECT_FALSE(none.succeeded());
    EXPECT_TRUE(contains(none.err, "Ideogram 4 needs its text encoder, Qwen3-VL-8B-Instruct's"))
        << none.describe();
    EXPECT_FALSE(fs::exists(dir_ + "/none.png"));

    ASSERT_TRUE(fs::is_regular_file(e2e::built_fixture("krea2_tiny_llm")));
    RunResult w =
        refused(e2e::with_flag_value(split_args(), "--llm", e2e::built_fixture("krea2_tiny_llm")),
                dir_ + "/wrong.png");
    EXPECT_FALSE(w.succeeded());
    EXPECT_TRUE(contains(w.err, "--llm: a Qwen3 320 wide with 12 layers; the Ideogram 4 DiT reads"))
        << w.describe();
    EXPECT_FALSE(fs::exists(dir_ + "/wrong.png"));

    RunResult v = refused(e2e::with_flag_value(split_args(), "--vae", ""), dir_ + "/vae.png");
    EXPECT_FALSE(v.succeeded());
    EXPECT_TRUE(contains(v.err, "Ideogram 4 needs the FLUX.2 VAE: pass --vae")) << v.describe();

    std::vector<std::string> pred = split_args();
    pred.insert(pred.end(), {"--prediction", "flux_flow"});
    RunResult p = refused(pred, dir_ + "/pred.png");
    EXPECT_FALSE(p.succeeded());
    EXPECT_TRUE(contains(p.err, "does not apply to Ideogram 4 models (they predict sd3_flow)"))
        << p.describe();

    ASSERT_TRUE(fs::is_regular_file(e2e::built_fixture("krea2_tiny_dit")));
    RunResult u = refused({"--diffusion-model", e2e::built_fixture("krea2_tiny_dit"),
                           "--uncond-diffusion-model", gguf("ideogram4_tiny_dit")},
                          dir_ + "/uncond.png");
    EXPECT_FALSE(u.succeeded());
    EXPECT_TRUE(contains(u.err, "--uncond-diffusion-model: Krea2 has no unconditional DiT"))
        << u.describe();
}

// The bytes -M info prints on its "bytes:" line ("304.6 MiB").
std::string total_bytes(const std::string& info) {
    const std::string key = "bytes:       ";
    const size_t at = info.find(key);
    if (at == std::string::npos) return "";
    const size_t end = info.find(" total", at);
    return end == std::string::npos ? "" : info.substr(at + key.size(), end - at - key.size());
}

// The --fit-dry-run plan's diffusion params bytes (0 when absent).
uint64_t planned_diffusion(const RunResult& r) {
    const nlohmann::json plan = nlohmann::json::parse(r.out, nullptr, false);
    if (plan.is_discarded() || !plan.contains("components")) return 0;
    for (const nlohmann::json& c : plan["components"])
        if (c.value("module", "") == "diffusion") return c.value("params_bytes", uint64_t{0});
    return 0;
}

TEST_F(Ideogram4Files, InfoAndAutoFitCountTheUncondDit) {
    const std::string uncond = gguf("ideogram4_tiny_uncond");
    ASSERT_TRUE(fs::is_regular_file(uncond)) << "missing " << uncond;
    RunResult alone = e2e::run_ggdiff({"-M", "info", "--uncond-diffusion-model", uncond}, dir_, 60);
    ASSERT_TRUE(alone.succeeded()) << alone.describe();
    EXPECT_TRUE(contains(alone.out, "family:      ideogram4 (Ideogram 4; its unconditional DiT)"))
        << alone.out;
    const std::string bytes = total_bytes(alone.out);
    ASSERT_FALSE(bytes.empty()) << alone.out;
    EXPECT_TRUE(contains(alone.out, "  diffusion      " + bytes + "\n")) << alone.out;
    EXPECT_TRUE(contains(alone.out, "    uncond DiT   " + bytes + "\n")) << alone.out;

    std::vector<std::string> all = {"-M", "info", "--uncond-diffusion-model", uncond};
    for (const std::string& a : split_args()) all.push_back(a);
    RunResult parts = e2e::run_ggdiff(all, dir_, 60);
    ASSERT_TRUE(parts.succeeded()) << parts.describe();
    EXPECT_TRUE(contains(parts.out, "family:      ideogram4 (Ideogram 4)\n")) << parts.out;
    EXPECT_TRUE(contains(parts.out, "    uncond DiT   " + bytes + "\n")) << parts.out;

    // --auto-fit plans both DiTs as the diffusion component (they share its device).
    auto dry = [&](bool with_uncond) {
        std::vector<std::string> args = split_args();
        if (with_uncond) args.insert(args.end(), {"--uncond-diffusion-model", uncond});
        args.insert(args.end(), {"-p", "a cat", "-W", "64", "-H", "64", "--cfg-scale", "4",
                                 "--auto-fit", "--fit-dry-run"});
        return e2e::run_ggdiff(args, dir_, 300);
    };
    RunResult one = dry(false), both = dry(true);
    ASSERT_TRUE(one.succeeded()) << one.describe();
    ASSERT_TRUE(both.succeeded()) << both.describe();
    const uint64_t dit = planned_diffusion(one);
    ASSERT_GT(dit, 0u) << one.out;
    // The fixture's unconditional DiT has the DiT's layout (its text weights all zeros).
    EXPECT_EQ(planned_diffusion(both), 2 * dit) << both.out;
}

}  // namespace
