#include "tokenizers/find_tokenizer.h"

#include <gtest/gtest.h>

#include "test_util.h"
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

TEST(FindClipMerges, NothingFoundSaysWhatToPass) {
    const fs::path root = test::fresh_dir("find_none");
    test::write_file(root / "m" / "model.safetensors", "x");
    auto r = find_clip_merges((root / "m" / "model.safetensors").string(), "");
    ASSERT_FALSE(r);
    const std::string& msg = r.status().message();
    EXPECT_NE(msg.find("no CLIP merge list found: pass --tokenizer /path/to/merges.txt"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find((root / "m" / "tokenizer").string()), std::string::npos) << msg;
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

}  // namespace
}  // namespace ggdiff
