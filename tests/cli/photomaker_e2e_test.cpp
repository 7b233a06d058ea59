// PhotoMaker through the CLI (the photomaker_tiny golden set of tests/golden: sdxl_mc32 with
// tiny PhotoMaker v1 / v2 files): the requests it cannot run are refused with a message that
// says why (no trigger word, the trigger word first, an empty ID folder, v2 without its ID
// embeddings or with embeddings for another number of images, ID images without a PhotoMaker
// model, PhotoMaker on a model that is not SDXL), and a PhotoMaker model with no ID images in
// the request generates the plain prompt's image (with a warning); the --auto-fit plan counts
// the ID encoder as its own component (photomaker: weights and measured compute buffer).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../golden/e2e_support.h"

namespace {

namespace fs = std::filesystem;
namespace e2e = ggdiff::e2e;
using e2e::contains;
using e2e::RunResult;

constexpr const char* kSuite = "photomaker_tiny";

std::string gguf(const std::string& stem) {
    return std::string(GGDIFF_BINARY_DIR) + "/fixtures/" + stem + ".gguf";
}

class PhotoMakerCli : public ::testing::Test {
  protected:
    void SetUp() override {
        for (const std::string& f : {e2e::binary_path(), e2e::built_fixture("sdxl_mc32"),
                                     gguf("photomaker_v1_tiny"), gguf("photomaker_v2_tiny")}) {
            ASSERT_TRUE(fs::is_regular_file(f))
                << "missing " << f << " (run through ctest: its fixture tests make the files)";
        }
        dir_ = e2e::fresh_dir();
    }

    static std::string inputs(const std::string& name) {
        return e2e::repo_suite_dir(kSuite) + "/" + name;
    }

    // One step at 64x64 with `pm` as the PhotoMaker file and `extra` after the prompt.
    RunResult run(const std::string& pm, const std::string& prompt,
                  const std::vector<std::string>& extra, int timeout = 300) const {
        std::vector<std::string> args = {"-m", e2e::built_fixture("sdxl_mc32")};
        if (!pm.empty()) args.insert(args.end(), {"--photo-maker", gguf(pm)});
        args.insert(args.end(), {"-p", prompt, "-W", "64", "-H", "64", "--steps", "1",
                                 "--sampling-method", "euler", "-o", dir_ + "/out.png"});
        args.insert(args.end(), extra.begin(), extra.end());
        return e2e::run_ggdiff(args, dir_, timeout);
    }

    std::string dir_;
};

TEST_F(PhotoMakerCli, RefusesAPromptWithoutTheTriggerWord) {
    RunResult r = run("photomaker_v1_tiny", "a photo of a woman in a garden",
                      {"--pm-id-images-dir", inputs("ids")});
    EXPECT_FALSE(r.succeeded()) << r.describe();
    EXPECT_TRUE(contains(r.err, "no trigger word \"img\"")) << r.describe();
}

TEST_F(PhotoMakerCli, RefusesTheTriggerWordWithoutAClassWord) {
    RunResult r =
        run("photomaker_v1_tiny", "img in a garden", {"--pm-id-images-dir", inputs("ids")});
    EXPECT_FALSE(r.succeeded()) << r.describe();
    EXPECT_TRUE(contains(r.err, "must follow a class word")) << r.describe();
}

TEST_F(PhotoMakerCli, RefusesAnEmptyIdFolder) {
    const std::string empty = dir_ + "/no_ids";
    fs::create_directories(empty);
    RunResult r = run("photomaker_v1_tiny", "a woman img", {"--pm-id-images-dir", empty});
    EXPECT_FALSE(r.succeeded()) << r.describe();
    EXPECT_TRUE(contains(r.err, "--pm-id-images-dir " + empty + ": no ID images")) << r.describe();
    RunResult missing =
        run("photomaker_v1_tiny", "a woman img", {"--pm-id-images-dir", dir_ + "/nowhere"});
    EXPECT_FALSE(missing.succeeded()) << missing.describe();
    EXPECT_TRUE(contains(missing.err, "not a directory")) << missing.describe();
}

TEST_F(PhotoMakerCli, V2NeedsMatchingIdEmbeddings) {
    RunResult none =
        run("photomaker_v2_tiny", "a woman img", {"--pm-id-images-dir", inputs("ids")});
    EXPECT_FALSE(none.succeeded()) << none.describe();
    EXPECT_TRUE(contains(none.err, "--pm-id-embed-path")) << none.describe();
    // id_embeds.bin holds two embeddings; ids_alt has one image.
    RunResult other = run(
        "photomaker_v2_tiny", "a woman img",
        {"--pm-id-images-dir", inputs("ids_alt"), "--pm-id-embed-path", inputs("id_embeds.bin")});
    EXPECT_FALSE(other.succeeded()) << other.describe();
    EXPECT_TRUE(contains(other.err, "2 embeddings of 512 values for 1 ID images"))
        << other.describe();
    RunResult bad =
        run("photomaker_v2_tiny", "a woman img",
            {"--pm-id-images-dir", inputs("ids"), "--pm-id-embed-path", inputs("ids/a.png")});
    EXPECT_FALSE(bad.succeeded()) << bad.describe();
    EXPECT_TRUE(contains(bad.err, "--pm-id-embed-path " + inputs("ids/a.png"))) << bad.describe();
}

TEST_F(PhotoMakerCli, IdImagesNeedAPhotoMakerModel) {
    RunResult r = run("", "a woman img", {"--pm-id-images-dir", inputs("ids")});
    EXPECT_FALSE(r.succeeded()) << r.describe();
    EXPECT_TRUE(contains(r.err, "--pm-id-images-dir needs a PhotoMaker model")) << r.describe();
}

TEST_F(PhotoMakerCli, OnlySdxlTakesPhotoMaker) {
    RunResult r = e2e::run_ggdiff(
        {"-m", e2e::fixture_path(), "--photo-maker", gguf("photomaker_v1_tiny"), "-p",
         "a woman img", "-W", "64", "-H", "64", "--steps", "1", "-o", dir_ + "/sd1.png"},
        dir_, 300);
    EXPECT_FALSE(r.succeeded()) << r.describe();
    EXPECT_TRUE(contains(r.err, "PhotoMaker works with SDXL models only")) << r.describe();
}

TEST_F(PhotoMakerCli, WithoutIdImagesThePlainPromptIsDrawn) {
    RunResult r = run("photomaker_v1_tiny", "a woman in a garden", {"-s", "5"}, 600);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    EXPECT_TRUE(contains(r.err, "no ID images")) << r.describe();
    RunResult plain = e2e::run_ggdiff(
        {"-m", e2e::built_fixture("sdxl_mc32"), "-p", "a woman in a garden", "-W", "64", "-H", "64",
         "--steps", "1", "--sampling-method", "euler", "-s", "5", "-o", dir_ + "/plain.png"},
        dir_, 600);
    ASSERT_TRUE(plain.succeeded()) << plain.describe();
    // The PhotoMaker file's UNet LoRA is applied all the same, so the images differ.
    const e2e::ImageDiff d = e2e::compare_images(dir_ + "/out.png", dir_ + "/plain.png");
    EXPECT_GT(d.mean_abs, 0.5) << "the PhotoMaker LoRA changed nothing";
}

// The --fit-dry-run plan's component `module` (null when absent).
nlohmann::json planned(const RunResult& r, const std::string& module) {
    const nlohmann::json plan = nlohmann::json::parse(r.out, nullptr, false);
    if (plan.is_discarded() || !plan.contains("components")) return nullptr;
    for (const nlohmann::json& c : plan["components"])
        if (c.value("module", "") == module) return c;
    return nullptr;
}

TEST_F(PhotoMakerCli, AutoFitCountsTheIdEncoder) {
    auto dry = [&](const std::string& pm, const std::vector<std::string>& extra) {
        std::vector<std::string> a = {"--auto-fit", "--fit-dry-run"};
        a.insert(a.end(), extra.begin(), extra.end());
        return run(pm, "a woman img", a);
    };
    // With the ID images the encoder's compute buffer is measured (it runs only with them).
    RunResult v1 = dry("photomaker_v1_tiny", {"--pm-id-images-dir", inputs("ids")});
    ASSERT_TRUE(v1.succeeded()) << v1.describe();
    const nlohmann::json c1 = planned(v1, "photomaker");
    ASSERT_TRUE(c1.is_object()) << v1.out;
    // CLIP ViT-L/14's vision tower, both projections and the fuse module (f16; the UNet LoRA
    // is merged into the diffusion weights and not counted here).
    EXPECT_GT(c1["params_bytes"].get<uint64_t>(), 600ull << 20) << c1;
    EXPECT_LT(c1["params_bytes"].get<uint64_t>(), 700ull << 20) << c1;
    ASSERT_TRUE(c1["compute_measured_bytes"].is_number()) << c1;
    EXPECT_GT(c1["compute_measured_bytes"].get<uint64_t>(), 0u) << c1;
    EXPECT_GE(c1["reserve_bytes"].get<uint64_t>(), c1["compute_measured_bytes"].get<uint64_t>());
    EXPECT_FALSE(c1["splittable"].get<bool>()) << c1;
    ASSERT_TRUE(planned(v1, "diffusion").is_object()) << v1.out;

    // v2 adds the perceiver resampler (and its id-embedding projection).
    RunResult v2 = dry("photomaker_v2_tiny", {"--pm-id-images-dir", inputs("ids"),
                                              "--pm-id-embed-path", inputs("id_embeds.bin")});
    ASSERT_TRUE(v2.succeeded()) << v2.describe();
    const nlohmann::json c2 = planned(v2, "photomaker");
    ASSERT_TRUE(c2.is_object()) << v2.out;
    EXPECT_GT(c2["params_bytes"].get<uint64_t>(), c1["params_bytes"].get<uint64_t>()) << c2;
    ASSERT_TRUE(c2["compute_measured_bytes"].is_number()) << c2;
    EXPECT_GT(c2["compute_measured_bytes"].get<uint64_t>(),
              c1["compute_measured_bytes"].get<uint64_t>())
        << c2;

    // Without ID images the encoder is not run: its weights are counted with the standard
    // reserve (512 MiB).
    RunResult none = dry("photomaker_v1_tiny", {});
    ASSERT_TRUE(none.succeeded()) << none.describe();
    const nlohmann::json c0 = planned(none, "photomaker");
    ASSERT_TRUE(c0.is_object()) << none.out;
    EXPECT_EQ(c0["params_bytes"], c1["params_bytes"]);
    EXPECT_TRUE(c0["compute_measured_bytes"].is_null()) << c0;
    EXPECT_EQ(c0["reserve_bytes"].get<uint64_t>(), 512ull << 20) << c0;
}

}  // namespace
