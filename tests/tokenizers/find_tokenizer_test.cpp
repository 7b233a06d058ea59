#include "tokenizers/find_tokenizer.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "tokenizers/clip_builtin.h"
#include "tokenizers/clip_tokenizer.h"

namespace ggdiff {
namespace {

namespace fs = std::filesystem;

TEST(FindClipMerges, TokenizerFlag) {
    const fs::path root = test::fresh_dir("find_flag");
    test::write_file(root / "clip_merges.txt", "x");
    test::write_file(root / "plain" / "merges.txt", "x");
    test::write_file(root / "diffusers" / "tokenizer" / "merges.txt", "x");
    test::write_file(root / "hf" / "tokenizer.json", "{}");
    fs::create_directories(root / "empty");

    auto file = find_clip_merges("/models/x.safetensors", (root / "clip_merges.txt").string());
    ASSERT_TRUE(file) << file.status().message();
    EXPECT_EQ(*file, (root / "clip_merges.txt").string());
    auto folder = find_clip_merges("", (root / "plain").string());
    ASSERT_TRUE(folder);
    EXPECT_EQ(*folder, (root / "plain").string());
    auto diffusers = find_clip_merges("", (root / "diffusers").string());
    ASSERT_TRUE(diffusers);
    EXPECT_EQ(*diffusers, (root / "diffusers" / "tokenizer").string());
    auto hf = find_clip_merges("", (root / "hf").string());
    ASSERT_TRUE(hf);
    EXPECT_EQ(*hf, (root / "hf").string());

    // The flag wins over a tokenizer/ folder next to the model.
    test::write_file(root / "model" / "tokenizer" / "merges.txt", "x");
    auto wins = find_clip_merges((root / "model" / "m.safetensors").string(),
                                 (root / "clip_merges.txt").string());
    ASSERT_TRUE(wins);
    EXPECT_EQ(*wins, (root / "clip_merges.txt").string());

    auto missing = find_clip_merges("", (root / "nope.txt").string());
    ASSERT_FALSE(missing);
    EXPECT_NE(missing.status().message().find("--tokenizer"), std::string::npos);
    auto empty = find_clip_merges("", (root / "empty").string());
    ASSERT_FALSE(empty);
    EXPECT_NE(empty.status().message().find("merges.txt"), std::string::npos);
}

TEST(FindClipMerges, DiffusersFolderNextToModel) {
    const fs::path root = test::fresh_dir("find_model");
    // model.safetensors beside tokenizer/
    test::write_file(root / "a" / "model.safetensors", "x");
    test::write_file(root / "a" / "tokenizer" / "merges.txt", "x");
    auto a = find_clip_merges((root / "a" / "model.safetensors").string(), "");
    ASSERT_TRUE(a) << a.status().message();
    EXPECT_EQ(*a, (root / "a" / "tokenizer").string());
    // diffusers layout: unet/ and text_encoder/ beside tokenizer/
    test::write_file(root / "b" / "unet" / "diffusion_pytorch_model.safetensors", "x");
    test::write_file(root / "b" / "tokenizer" / "vocab.json", "{}");
    test::write_file(root / "b" / "tokenizer" / "merges.txt", "x");
    auto b = find_clip_merges(
        (root / "b" / "unet" / "diffusion_pytorch_model.safetensors").string(), "");
    ASSERT_TRUE(b) << b.status().message();
    EXPECT_EQ(fs::weakly_canonical(*b), fs::weakly_canonical(root / "b" / "tokenizer"));
    // the diffusers root folder itself as the model
    auto c = find_clip_merges((root / "b").string(), "");
    ASSERT_TRUE(c);
    EXPECT_EQ(*c, (root / "b" / "tokenizer").string());
}

TEST(FindClipMerges, NothingFoundIsEmpty) {
    const fs::path root = test::fresh_dir("find_none");
    test::write_file(root / "m" / "model.safetensors", "x");
    auto r = find_clip_merges((root / "m" / "model.safetensors").string(), "");
    ASSERT_TRUE(r) << r.status().message();
    EXPECT_EQ(*r, "");
}

TEST(FindClipMerges, FoundPathLoads) {
    const fs::path root = test::fresh_dir("find_load");
    test::write_file(root / "tokenizer" / "merges.txt", test::read_file(test::clip_merges_path()));
    test::write_file(root / "model.safetensors", "x");
    auto path = find_clip_merges((root / "model.safetensors").string(), "");
    ASSERT_TRUE(path) << path.status().message();
    auto tok = ClipTokenizer::from_path(*path);
    ASSERT_TRUE(tok) << tok.status().message();
    EXPECT_EQ(tok->encode("a horse"), (std::vector<int>{320, 4558}));
}

// The built-in list is OpenAI CLIP's merges.txt, byte for byte.
TEST(ClipBuiltin, IsTheSharedMergeList) {
    auto text = builtin_clip_merges();
    ASSERT_TRUE(text) << text.status().message();
    EXPECT_EQ(*text, test::read_file(test::clip_merges_path()));
    auto tok = builtin_clip_tokenizer();
    ASSERT_TRUE(tok) << tok.status().message();
    EXPECT_EQ(tok->vocab_size(), ClipTokenizer::kVocabSize);
    EXPECT_EQ(tok->encode("a photograph of an astronaut riding a horse"),
              test::clip().encode("a photograph of an astronaut riding a horse"));
}

// Which vocabulary a model gets: --tokenizer (file or either folder form), then the
// checkpoint's, then a tokenizer/ folder beside the model, then the built-in one.
TEST(OpenClipTokenizer, Precedence) {
    const fs::path root = test::fresh_dir("load_order");
    const std::string merges = test::read_file(test::clip_merges_path());
    // CLIP's list with the merge that makes "horse</w>" (id 4558 = 512 + rank 4046) swapped
    // with the one before it: a valid list that gives "horse" id 4557.
    std::vector<std::string> lines;
    for (size_t pos = 0; pos < merges.size();) {
        const size_t end = merges.find('\n', pos);
        lines.push_back(merges.substr(pos, end - pos));
        pos = end == std::string::npos ? merges.size() : end + 1;
    }
    ASSERT_EQ(lines[4047], "hor se</w>");
    std::swap(lines[4046], lines[4047]);
    std::string tiny;
    for (const std::string& l : lines) tiny += l + "\n";
    test::write_file(root / "alone" / "model.safetensors", "x");
    test::write_file(root / "beside" / "model.safetensors", "x");
    test::write_file(root / "beside" / "tokenizer" / "merges.txt", merges);
    test::write_file(root / "flagdir" / "merges.txt", merges);
    test::write_file(root / "diffusers" / "tokenizer" / "merges.txt", merges);
    test::write_file(root / "tiny" / "merges.txt", tiny);
    const std::vector<int> horse = {320, 4558};  // "a horse" in CLIP's vocabulary

    std::string source;
    auto builtin =
        open_clip_tokenizer((root / "alone" / "model.safetensors").string(), "", nullptr, &source);
    ASSERT_TRUE(builtin) << builtin.status().message();
    EXPECT_EQ(source, "built in");
    EXPECT_EQ(builtin->encode("a horse"), horse);

    auto beside =
        open_clip_tokenizer((root / "beside" / "model.safetensors").string(), "", nullptr, &source);
    ASSERT_TRUE(beside) << beside.status().message();
    EXPECT_EQ(source, (root / "beside" / "tokenizer").string());
    EXPECT_EQ(beside->encode("a horse"), horse);

    for (const fs::path& flag :
         {root / "flagdir", root / "diffusers", root / "flagdir" / "merges.txt"}) {
        auto t = open_clip_tokenizer((root / "alone" / "model.safetensors").string(), flag.string(),
                                     nullptr, &source);
        ASSERT_TRUE(t) << flag << ": " << t.status().message();
        EXPECT_EQ(t->encode("a horse"), horse) << flag;
    }

    // The flag beats the checkpoint's list, which beats a folder beside the model.
    auto flag_wins = open_clip_tokenizer((root / "beside" / "model.safetensors").string(),
                                         (root / "tiny").string(), &merges, &source);
    ASSERT_TRUE(flag_wins) << flag_wins.status().message();
    EXPECT_NE(flag_wins->encode("a horse"), horse);
    auto embedded =
        open_clip_tokenizer((root / "beside" / "model.safetensors").string(), "", &tiny, &source);
    ASSERT_TRUE(embedded) << embedded.status().message();
    EXPECT_EQ(source, "the checkpoint");
    EXPECT_NE(embedded->encode("a horse"), horse);

    // A broken file named by the flag is an error naming it, not a silent fallback.
    test::write_file(root / "broken" / "merges.txt", "#version: 0.2\nnot-a-merge\n");
    auto broken = open_clip_tokenizer("", (root / "broken").string(), nullptr, &source);
    ASSERT_FALSE(broken);
    EXPECT_NE(broken.status().message().find("--tokenizer"), std::string::npos)
        << broken.status().message();
}

}  // namespace
}  // namespace ggdiff
