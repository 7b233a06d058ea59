// --embd-dir end to end. An embedding whose rows are the model's own token-table rows of a
// word must give exactly the image of that word, on SD1 (one encoder) and on SDXL (each
// encoder its own table: a wrong clip_l or clip_g row changes the image); TI hashes reach
// the metadata; a folder that is missing and a DiT family are answered clearly.
#include <gtest/gtest.h>

#include "../golden/e2e_support.h"
#include "../golden/flux_e2e.h"
#include "../io/io_test_util.h"
#include "image/image_io.h"
#include "image/image_metadata.h"
#include "io/tensor_index.h"

namespace {

using namespace ggdiff::e2e;
using ggdiff::testing::FakeTensor;
using ggdiff::testing::to_bytes;
using ggdiff::testing::write_safetensors;

const std::string kSdxl = std::string(GGDIFF_BINARY_DIR) + "/fixtures/sdxl_mc32.safetensors";
constexpr int kHorse = 4558;  // "horse</w>"
constexpr int kCube = 11353;  // "cube</w>"

// Row `id` of the token table `name` in `file`, as stored (converted to f32).
std::vector<float> token_row(const std::string& file, const std::string& name, int id) {
    ggdiff::TensorIndex index;
    EXPECT_TRUE(index.add(file, "").ok());
    for (const ggdiff::TensorInfo& t : index.tensors()) {
        if (t.source_name != name) continue;
        std::vector<float> all;
        EXPECT_TRUE(index.read_f32(t, all).ok());
        const size_t width = static_cast<size_t>(t.shape[1]);
        return std::vector<float>(all.begin() + id * width, all.begin() + (id + 1) * width);
    }
    ADD_FAILURE() << "no tensor " << name << " in " << file;
    return {};
}

FakeTensor rows(const std::string& name, const std::vector<float>& v) {
    return {name, "F32", {1, static_cast<int64_t>(v.size())}, to_bytes(v)};
}

std::vector<std::string> request(const std::string& prompt, const std::string& out) {
    std::vector<std::string> a = euler_request(2, "3", prompt);
    a.insert(a.end(), {"-o", out});
    return a;
}

RunResult run(std::vector<std::string> args, const std::vector<std::string>& req,
              const std::string& dir) {
    args.insert(args.end(), req.begin(), req.end());
    return run_ggdiff(args, dir, 900);
}

TEST(Embeddings, Sd1RowsOfAWordGiveThatWordsImage) {
    ASSERT_TRUE(prerequisites_ok());
    const std::string dir = fresh_dir();
    const std::string emb = dir + "/emb";
    fs::create_directories(emb);
    const std::string table =
        "cond_stage_model.transformer.text_model.embeddings.token_embedding.weight";
    write_safetensors(emb + "/MyThing.safetensors",
                      {rows("emb_params", token_row(fixture_path(), table, kHorse))});
    const std::string prompt = "a photograph of an astronaut riding a ";
    RunResult word = run(model_args(), request(prompt + "horse", dir + "/word.png"), dir);
    ASSERT_TRUE(word.succeeded()) << word.describe();
    // Found in any case and inside a word ("amything" is "a" + the embedding).
    RunResult e =
        run({"-m", fixture_path(), "--embd-dir", emb},
            request(prompt.substr(0, prompt.size() - 1) + "Mything", dir + "/emb.png"), dir);
    ASSERT_TRUE(e.succeeded()) << e.describe();
    // "a horse" vs "amything": "a" stays a token of its own, so the token sequences agree.
    const ImageDiff d = compare_images(dir + "/emb.png", dir + "/word.png");
    ASSERT_TRUE(d.ok) << d.error;
    EXPECT_EQ(d.max_abs, 0) << "mean " << d.mean_abs;
    auto info = ggdiff::read_image_parameters(dir + "/emb.png");
    ASSERT_TRUE(info.ok()) << info.status().message();
    EXPECT_TRUE(contains(*info, "TI hashes: \"mything: ")) << *info;

    // A missing folder is an error naming the flag.
    RunResult missing =
        run({"-m", fixture_path(), "--embd-dir", dir + "/nope"}, request("x", dir + "/m.png"), dir);
    EXPECT_TRUE(missing.failed_cleanly()) << missing.describe();
    EXPECT_TRUE(contains(missing.err, "--embd-dir")) << missing.err;
}

TEST(Embeddings, SdxlEachEncoderGetsItsOwnVectors) {
    ASSERT_TRUE(fs::is_regular_file(kSdxl)) << kSdxl;
    const std::string dir = fresh_dir();
    const std::string l_table =
        "conditioner.embedders.0.transformer.text_model.embeddings.token_embedding.weight";
    const std::string g_table = "conditioner.embedders.1.model.token_embedding.weight";
    const std::vector<float> l_horse = token_row(kSdxl, l_table, kHorse);
    const std::vector<float> g_horse = token_row(kSdxl, g_table, kHorse);
    const std::vector<float> l_cube = token_row(kSdxl, l_table, kCube);
    const std::vector<float> g_cube = token_row(kSdxl, g_table, kCube);
    ASSERT_EQ(l_horse.size(), 768u);
    ASSERT_EQ(g_horse.size(), 1280u);
    const std::string prompt = "a photograph of an astronaut riding a ";
    RunResult word = run({"-m", kSdxl}, request(prompt + "horse", dir + "/word.png"), dir);
    ASSERT_TRUE(word.succeeded()) << word.describe();
    struct Variant {
        const char* name;
        std::vector<float> l, g;
        bool same;
    };
    const Variant variants[] = {{"right", l_horse, g_horse, true},
                                {"wrong_g", l_horse, g_cube, false},
                                {"wrong_l", l_cube, g_horse, false}};
    for (const Variant& v : variants) {
        const std::string emb = dir + "/" + v.name;
        fs::create_directories(emb);
        write_safetensors(emb + "/thing.safetensors", {rows("clip_g", v.g), rows("clip_l", v.l)});
        const std::string out = dir + "/" + v.name + ".png";
        RunResult r = run({"-m", kSdxl, "--embd-dir", emb}, request(prompt + "thing", out), dir);
        ASSERT_TRUE(r.succeeded()) << r.describe();
        const ImageDiff d = compare_images(out, dir + "/word.png");
        ASSERT_TRUE(d.ok) << d.error;
        if (v.same) {
            EXPECT_EQ(d.max_abs, 0) << v.name << ": mean " << d.mean_abs;
        } else {
            EXPECT_GT(d.mean_abs, 0.5) << v.name << ": the encoder's vectors had no effect";
        }
    }
}

TEST(Embeddings, NoEffectOnDitFamiliesSaysSo) {
    const std::string dit = flux::dit();
    if (!fs::is_regular_file(dit)) GTEST_SKIP() << "no FLUX fixture: " << dit;
    const std::string dir = fresh_dir();
    // Nothing else is given: the warning comes before the missing encoders stop the load.
    RunResult r = run_ggdiff({"--diffusion-model", dit, "--embd-dir", dir, "-p", "x"}, dir, 300);
    EXPECT_TRUE(contains(r.err, "--embd-dir has no effect on FLUX.1")) << r.describe();
}

}  // namespace
