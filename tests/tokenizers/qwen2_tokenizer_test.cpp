// The Qwen2 byte-level BPE tokenizer on the synthetic Qwen2 vocabulary
// (../shared/data/qwen2_synthetic). The expected ids come from a Python reference that runs
// the Hugging Face pre-tokenizer regex (with the `regex` module) and GPT-2 byte-level BPE on
// the same files.
#include "tokenizers/qwen2_tokenizer.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "tokenizers/find_tokenizer.h"

namespace ggdiff {
namespace {

namespace fs = std::filesystem;

std::string synthetic_dir() {
    return std::string(GGDIFF_SHARED_DIR) + "/data/qwen2_synthetic";
}

const Qwen2Tokenizer& qwen2() {
    static const Qwen2Tokenizer* tok = [] {
        auto r = Qwen2Tokenizer::from_path(synthetic_dir());
        if (!r) {
            ADD_FAILURE() << r.status().message();
            std::abort();
        }
        return new Qwen2Tokenizer(std::move(r).value());
    }();
    return *tok;
}

TEST(Qwen2Tokenizer, SpecialTokensFromAddedTokensJson) {
    EXPECT_EQ(qwen2().token_to_id("<|endoftext|>"), 151643);
    EXPECT_EQ(qwen2().token_to_id("<|im_start|>"), 151644);
    EXPECT_EQ(qwen2().token_to_id("<|im_end|>"), 151645);
    EXPECT_GE(qwen2().added_count(), 3u);
}

TEST(Qwen2Tokenizer, MatchesReference) {
    const std::vector<std::pair<std::string, std::vector<int>>> cases = {
        {"a photograph of an astronaut riding a horse",
         {64,  220,  79, 624, 274,  566, 1014, 220, 262, 220, 260, 220, 769,
          270, 1501, 83, 220, 1274, 268, 70,   220, 64,  220, 71,  266, 842}},
        {"<|im_end|>\n<|im_start|>assistant\n", {151645, 198, 151644, 489, 294, 83, 260, 83, 198}},
        {"Hello world's  TEST 123 na\u00efve caf\u00e9!!\n\n  x  ",
         {39,  1576, 1192, 220, 86,  266, 1732, 6,    82,   220, 220, 51,
          36,  50,   51,   220, 16,  17,  18,   220,  1776, 127, 107, 1947,
          220, 614,  69,   127, 102, 0,   0,    1484, 220,  220, 87,  1485}},
        {"  leading\r\n\ttabs 'RE 'll \u00e9t\u00e9 \u65e5\u672c\u8a9e \U0001F600 x",
         {220, 220, 75,  684, 67,   268, 70,  201, 198, 197, 971,  82,  220, 6,
          49,  36,  220, 6,   1739, 220, 127, 102, 83,  127, 102,  220, 162, 245,
          98,  162, 250, 105, 164,  103, 252, 220, 172, 253, 2089, 220, 87}},
        {"a (red:1.2) apple, <|endoftext|>end",
         {64, 220, 7, 504, 25, 16, 13, 17, 8, 220, 1376, 962, 68, 11, 220, 151643, 1578, 67}},
    };
    for (const auto& [text, ids] : cases) {
        EXPECT_EQ(qwen2().encode(text), ids) << text;
        EXPECT_EQ(qwen2().decode(ids), text);
    }
}

TEST(Qwen2Tokenizer, PreTokenizerPieces) {
    const std::vector<std::string> want = {"Hello", " world", "'s",     " ", " TEST", " ", "1",
                                           "2",     "3",      "!!\n\n", " ", " x",    "  "};
    EXPECT_EQ(Qwen2Tokenizer::pre_tokenize("Hello world's  TEST 123!!\n\n  x  "), want);
}

TEST(Qwen2Tokenizer, TokenizerJsonAndFlatAddedTokens) {
    const fs::path root = test::fresh_dir("qwen2_json");
    test::write_file(root / "tokenizer.json",
                     R"({"model": {"vocab": {"a": 0, "b": 1, "ab": 2, "\u0120": 3},
                         "merges": [["a", "b"]]},
                         "added_tokens": [{"id": 9, "content": "<|im_start|>"}]})");
    auto tok = Qwen2Tokenizer::from_path((root / "tokenizer.json").string());
    ASSERT_TRUE(tok) << tok.status().message();
    EXPECT_EQ(tok->encode("<|im_start|>ab a"), (std::vector<int>{9, 2, 3, 0}));

    test::write_file(root / "flat" / "vocab.json", R"({"a": 0, "b": 1, "ab": 2})");
    test::write_file(root / "flat" / "merges.txt", "#version: 0.2\na b\n");
    test::write_file(root / "flat" / "added_tokens.json", R"({"<|im_end|>": 7})");
    auto flat = Qwen2Tokenizer::from_path((root / "flat").string());
    ASSERT_TRUE(flat) << flat.status().message();
    EXPECT_EQ(flat->encode("ab<|im_end|>"), (std::vector<int>{2, 7}));

    // Without any special token the chat template could not be encoded: a clear error.
    test::write_file(root / "bare" / "vocab.json", R"({"a": 0})");
    test::write_file(root / "bare" / "merges.txt", "a a\n");
    auto bare = Qwen2Tokenizer::from_path((root / "bare").string());
    ASSERT_FALSE(bare);
    EXPECT_NE(bare.status().message().find("special tokens"), std::string::npos);
}

TEST(FindLlmTokenizer, FlagNextToModelAndErrors) {
    const fs::path root = test::fresh_dir("find_llm");
    test::write_file(root / "flag" / "vocab.json", "{}");
    test::write_file(root / "flag" / "merges.txt", "");
    auto flag = find_llm_tokenizer({"/nowhere/llm.safetensors"}, (root / "flag").string());
    ASSERT_TRUE(flag) << flag.status().message();
    EXPECT_EQ(*flag, (root / "flag").string());

    // A diffusers pipeline: text_encoder/model.safetensors with tokenizer/ beside it.
    test::write_file(root / "pipe" / "tokenizer" / "tokenizer.json", "{}");
    auto diffusers =
        find_llm_tokenizer({(root / "pipe" / "text_encoder" / "model.safetensors").string()}, "");
    ASSERT_TRUE(diffusers) << diffusers.status().message();
    EXPECT_EQ(fs::path(*diffusers).filename(), "tokenizer");

    auto missing = find_llm_tokenizer({(root / "none" / "llm.safetensors").string()}, "");
    ASSERT_FALSE(missing);
    EXPECT_NE(missing.status().message().find("--llm-tokenizer"), std::string::npos);
    // The DiT and the text encoder in one folder: each place is named once.
    const std::string dir = (root / "none").string();
    auto same_folder = find_llm_tokenizer({dir + "/dit.safetensors", dir + "/llm.safetensors"}, "");
    ASSERT_FALSE(same_folder);
    const std::string text = same_folder.status().message();
    const std::string place = dir + "/tokenizer";
    ASSERT_NE(text.find(place), std::string::npos) << text;
    EXPECT_EQ(text.find(place, text.find(place) + 1), std::string::npos) << text;
    auto bad_flag = find_llm_tokenizer({}, (root / "absent").string());
    ASSERT_FALSE(bad_flag);
    EXPECT_NE(bad_flag.status().message().find("no such file"), std::string::npos);
}

}  // namespace
}  // namespace ggdiff
