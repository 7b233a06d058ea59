// --embd-dir's library: which names a prompt uses, the vectors and ids it gets for each
// encoder (SD1 one table, SDXL clip_l and clip_g), and the errors for folders and files that
// cannot be used.
#include "pipeline/parts/text_embeddings.h"

#include <gtest/gtest.h>

#include "../io/io_test_util.h"
#include "../support/torch_writer.h"

namespace ggdiff {
namespace {

using testing::f16_tensor;
using testing::f32_tensor;
using testing::FakeTensor;
using testing::pattern;
using testing::write_bytes;
using testing::write_safetensors;

bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

std::shared_ptr<TextEmbeddings> sd1(const std::string& dir) {
    auto lib = TextEmbeddings::open(dir, {768}, {"CLIP ViT-L"}, 49408);
    EXPECT_TRUE(lib.ok()) << lib.status().message();
    return lib.ok() ? *lib : nullptr;
}

TEST(TextEmbeddings, MissingFolderIsAnError) {
    auto lib =
        TextEmbeddings::open(testing::test_dir("te_missing") + "/nope", {768}, {"CLIP"}, 49408);
    ASSERT_FALSE(lib.ok());
    EXPECT_TRUE(contains(lib.status().message(), "--embd-dir")) << lib.status().message();
    EXPECT_TRUE(contains(lib.status().message(), "no such folder")) << lib.status().message();
}

TEST(TextEmbeddings, NamesTheirRowsAndWeightsInAPrompt) {
    const std::string dir = testing::test_dir("te_sd1");
    write_safetensors(dir + "/XtraStyle.safetensors", {f32_tensor("emb_params", {2, 768}, 3)});
    write_safetensors(dir + "/other.safetensors", {f16_tensor("anything", {768}, 4)});
    write_bytes(dir + "/notes.txt", "not an embedding");
    auto lib = sd1(dir);
    ASSERT_TRUE(lib);
    EXPECT_EQ(lib->names(), (std::vector<std::string>{"other", "xtrastyle"}));

    // Not named: nothing loaded, no ids, no hashes.
    auto none = lib->for_prompt("a photograph of a horse");
    ASSERT_TRUE(none.ok()) << none.status().message();
    EXPECT_TRUE(none->empty());
    EXPECT_EQ(lib->take_hashes(), "");

    auto e = lib->for_prompt("(horse:1.2), xtraSTYLE and [myother]");
    ASSERT_TRUE(e.ok()) << e.status().message();
    EXPECT_EQ(e->words.words, (std::vector<std::string>{"other", "xtrastyle"}));
    EXPECT_EQ(e->words.ids, (std::vector<std::vector<int>>{{49408}, {49409, 49410}}));
    ASSERT_EQ(e->tables.size(), 1u);
    ASSERT_EQ(e->tables[0].size(), 3u * 768u);
    // Row 0: the F16 vector (converted), rows 1-2: the F32 file's values.
    const std::vector<float> f32 = pattern(2 * 768, 3), f16 = pattern(768, 4);
    EXPECT_NEAR(e->tables[0][5], f16[5], 1e-3f);
    EXPECT_EQ(e->tables[0][768 + 7], f32[7]);
    EXPECT_EQ(e->tables[0][2 * 768 + 767], f32[768 + 767]);

    // The graph's override: ids of the rows become 0, their positions take the vectors.
    std::vector<int32_t> ids = {49406, 320, 49409, 49410, 49408, 49407};
    const PromptEmbeddings::Override ov = e->override_for(0, 768, ids);
    EXPECT_TRUE(ov.any);
    EXPECT_EQ(ids, (std::vector<int32_t>{49406, 320, 0, 0, 0, 49407}));
    EXPECT_EQ(ov.keep, (std::vector<float>{1, 1, 0, 0, 0, 1}));
    EXPECT_EQ(ov.vectors[2 * 768 + 7], f32[7]);
    EXPECT_EQ(ov.vectors[1 * 768 + 7], 0.0f);

    // Both used since the last call, each once, 12 hex digits.
    const std::string hashes = lib->take_hashes();
    EXPECT_TRUE(contains(hashes, "other: ")) << hashes;
    EXPECT_TRUE(contains(hashes, "xtrastyle: ")) << hashes;
    EXPECT_EQ(hashes.size(), std::string("other: 0123456789ab, xtrastyle: 0123456789ab").size());
    EXPECT_EQ(lib->take_hashes(), "");
}

TEST(TextEmbeddings, BadFilesFailOnlyThePromptsThatUseThem) {
    const std::string dir = testing::test_dir("te_bad");
    write_safetensors(dir + "/good.safetensors", {f32_tensor("emb_params", {1, 768})});
    write_safetensors(dir + "/wide.safetensors", {f32_tensor("emb_params", {2, 1024})});
    write_safetensors(dir + "/two.safetensors",
                      {f32_tensor("a", {1, 768}), f32_tensor("b", {1, 768}, 2)});
    write_bytes(dir + "/broken.safetensors", "garbage");
    write_bytes(dir + "/old.pt", "PK\x03\x04 pickle");
    auto lib = sd1(dir);
    ASSERT_TRUE(lib);
    EXPECT_TRUE(lib->for_prompt("good").ok());

    auto wide = lib->for_prompt("wide");
    ASSERT_FALSE(wide.ok());
    const std::string& w = wide.status().message();
    EXPECT_TRUE(contains(w, dir + "/wide.safetensors")) << w;
    EXPECT_TRUE(contains(w, "768")) << w;
    EXPECT_TRUE(contains(w, "emb_params [2, 1024]")) << w;

    auto two = lib->for_prompt("two");
    ASSERT_FALSE(two.ok());
    EXPECT_TRUE(contains(two.status().message(), "several tensors")) << two.status().message();

    auto broken = lib->for_prompt("a broken thing");
    ASSERT_FALSE(broken.ok());
    EXPECT_TRUE(contains(broken.status().message(), "broken.safetensors"))
        << broken.status().message();

    auto pt = lib->for_prompt("old");
    ASSERT_FALSE(pt.ok());
    EXPECT_TRUE(contains(pt.status().message(), dir + "/old.pt")) << pt.status().message();
    EXPECT_TRUE(contains(pt.status().message(), "zip archive")) << pt.status().message();
}

// A1111's .pt embeddings: {"string_to_token": {"*": 265}, "string_to_param": {"*": [n, 768]},
// "name": ...}; the token id is a tensor too, of another width, so the parameter is chosen by
// its name. A diffusers learned_embeds.bin is {"<token>": [768]}.
TEST(TextEmbeddings, PytorchFilesAreRead) {
    const std::string dir = testing::test_dir("te_pytorch");
    testing::TorchTensor token;
    token.name = "string_to_token/*";
    token.storage_type = "LongStorage";
    token.data = testing::le_bytes(265, 8);
    testing::TorchTensor param;
    param.name = "string_to_param/*";
    param.storage_type = "FloatStorage";
    param.shape = {2, 768};
    param.data = testing::to_bytes(pattern(2 * 768, 4));
    write_bytes(dir + "/a1111.pt", testing::torch_zip({token, param}));
    testing::TorchTensor learned = param;
    learned.name = "<cat-toy>";
    learned.shape = {768};
    learned.data = testing::to_bytes(pattern(768, 5));
    write_bytes(dir + "/learned.bin", testing::torch_legacy({learned}));
    auto lib = sd1(dir);
    ASSERT_TRUE(lib);
    auto e = lib->for_prompt("a a1111 and learned");
    ASSERT_TRUE(e.ok()) << e.status().message();
    EXPECT_EQ(e->words.ids, (std::vector<std::vector<int>>{{49408, 49409}, {49410}}));
    ASSERT_EQ(e->tables.size(), 1u);
    std::vector<float> want = pattern(2 * 768, 4);
    const std::vector<float> second = pattern(768, 5);
    want.insert(want.end(), second.begin(), second.end());
    EXPECT_EQ(e->tables[0], want);
}

TEST(TextEmbeddings, SdxlGivesEachEncoderItsVectors) {
    const std::string dir = testing::test_dir("te_sdxl");
    write_safetensors(dir + "/both.safetensors",
                      {f32_tensor("clip_g", {3, 1280}, 5), f32_tensor("clip_l", {3, 768}, 6)});
    write_safetensors(dir + "/lonly.safetensors", {f32_tensor("emb_params", {2, 768})});
    write_safetensors(dir + "/uneven.safetensors",
                      {f32_tensor("clip_g", {2, 1280}), f32_tensor("clip_l", {3, 768})});
    auto lib = TextEmbeddings::open(dir, {768, 1280}, {"clip_l", "clip_g"}, 49408);
    ASSERT_TRUE(lib.ok()) << lib.status().message();
    auto e = (*lib)->for_prompt("a both b");
    ASSERT_TRUE(e.ok()) << e.status().message();
    EXPECT_EQ(e->words.ids, (std::vector<std::vector<int>>{{49408, 49409, 49410}}));
    ASSERT_EQ(e->tables.size(), 2u);
    EXPECT_EQ(e->tables[0], pattern(3 * 768, 6));
    EXPECT_EQ(e->tables[1], pattern(3 * 1280, 5));
    std::vector<int32_t> ids_l = {49406, 49409, 49407}, ids_g = ids_l;
    EXPECT_EQ(e->override_for(0, 768, ids_l).vectors[768 + 11], pattern(3 * 768, 6)[768 + 11]);
    EXPECT_EQ(e->override_for(1, 1280, ids_g).vectors[1280 + 11], pattern(3 * 1280, 5)[1280 + 11]);

    auto lonly = (*lib)->for_prompt("lonly");
    ASSERT_FALSE(lonly.ok());
    EXPECT_TRUE(contains(lonly.status().message(), "1280 (clip_g)")) << lonly.status().message();
    auto uneven = (*lib)->for_prompt("uneven");
    ASSERT_FALSE(uneven.ok());
    EXPECT_TRUE(contains(uneven.status().message(), "3 vectors for clip_l but 2 for clip_g"))
        << uneven.status().message();
}

}  // namespace
}  // namespace ggdiff
