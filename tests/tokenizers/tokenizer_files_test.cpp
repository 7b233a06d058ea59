// Tokenizer files as hostile input: bounded reads, bounded JSON nesting, and malformed shapes
// that are errors rather than exceptions.
#include <chrono>
#include <string>

#include <gtest/gtest.h>

#include "core/read_file.h"
#include "test_util.h"
#include "tokenizers/clip_tokenizer.h"
#include "tokenizers/qwen2_tokenizer.h"
#include "tokenizers/tokenizer_files.h"

namespace ggdiff {
namespace {

namespace fs = std::filesystem;

bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(TokenizerFiles, EndlessStreamsStopAtTheLimit) {
    // Before the limit, /dev/zero as a tokenizer file was read until memory ran out.
    const auto t0 = std::chrono::steady_clock::now();
    auto clip = ClipTokenizer::from_path("/dev/zero");
    ASSERT_FALSE(clip);
    EXPECT_TRUE(contains(clip.status().message(), "file is too large")) << clip.status().message();
    auto qwen = Qwen2Tokenizer::from_path("/dev/zero");
    ASSERT_FALSE(qwen);
    EXPECT_TRUE(contains(qwen.status().message(), "file is too large")) << qwen.status().message();
    EXPECT_LT(seconds_since(t0), 5.0);
}

TEST(TokenizerFiles, LargeRegularFilesAreRefusedBeforeReading) {
    const fs::path dir = test::fresh_dir("tokenizer_files_large");
    const fs::path big = dir / "tokenizer.json";
    test::write_file(big, "{}");
    fs::resize_file(big, kMaxTokenizerFileBytes + 1);  // sparse: nothing is written
    auto r = read_tokenizer_json(big.string());
    ASSERT_FALSE(r);
    EXPECT_TRUE(contains(r.status().message(), "file is too large")) << r.status().message();
    EXPECT_TRUE(contains(r.status().message(), big.string())) << r.status().message();
}

TEST(TokenizerFiles, DeepJsonIsRefusedBeforeParsing) {
    const fs::path dir = test::fresh_dir("tokenizer_files_deep");
    const int depth = 200000;
    test::write_file(dir / "vocab.json",
                     "{\"a\": " + std::string(depth, '[') + std::string(depth, ']') + "}");
    test::write_file(dir / "merges.txt", "#version: 0.2\na b\n");
    auto clip = ClipTokenizer::from_path(dir.string());
    ASSERT_FALSE(clip);
    EXPECT_TRUE(contains(clip.status().message(), "nests deeper than 64"))
        << clip.status().message();
    auto qwen = Qwen2Tokenizer::from_path(dir.string());
    ASSERT_FALSE(qwen);
    EXPECT_TRUE(contains(qwen.status().message(), "nests deeper than 64"))
        << qwen.status().message();

    // Brackets inside strings are text, and ordinary files pass.
    EXPECT_TRUE(check_json_nesting("{\"[[[[\": \"\\\"{{{{\"}", 1).ok());
    EXPECT_FALSE(check_json_nesting("[[1]]", 1).ok());
    EXPECT_TRUE(check_json_nesting("[[1]]", 2).ok());
}

TEST(TokenizerFiles, MalformedQwenShapesAreErrors) {
    const fs::path root = test::fresh_dir("tokenizer_files_shapes");
    const std::string good_model =
        R"("model": {"vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]})";
    struct Case {
        const char* name;
        std::string tokenizer_json;
        const char* error;
    };
    const Case cases[] = {
        {"array_root", "[1, 2]", "not a BPE tokenizer.json"},
        {"model_number", R"({"model": 5})", "not a BPE tokenizer.json"},
        {"vocab_array", R"({"model": {"vocab": [1], "merges": []}})", "not a BPE tokenizer.json"},
        {"merges_object", R"({"model": {"vocab": {"a": 0}, "merges": {"a": 1}}})",
         "not a BPE tokenizer.json"},
        {"added_number", "{" + good_model + R"(, "added_tokens": [7]})", "an added token"},
        {"added_no_id", "{" + good_model + R"(, "added_tokens": [{"content": "<x>"}]})",
         "an added token"},
        {"added_content_number",
         "{" + good_model + R"(, "added_tokens": [{"content": 1, "id": 3}]})", "an added token"},
        {"added_huge_id",
         "{" + good_model + R"(, "added_tokens": [{"content": "<x>", "id": 99999999999}]})",
         "an added token"},
    };
    for (const Case& c : cases) {
        const fs::path p = root / (std::string(c.name) + ".json");
        test::write_file(p, c.tokenizer_json);
        auto r = Qwen2Tokenizer::from_path(p.string());
        ASSERT_FALSE(r) << c.name;
        EXPECT_TRUE(contains(r.status().message(), c.error))
            << c.name << ": " << r.status().message();
    }

    // The same in a vocab.json + merges.txt folder.
    test::write_file(root / "flat" / "vocab.json", R"({"a": 0, "b": "one"})");
    test::write_file(root / "flat" / "merges.txt", "a b\n");
    auto flat = Qwen2Tokenizer::from_path((root / "flat").string());
    ASSERT_FALSE(flat);
    EXPECT_TRUE(contains(flat.status().message(), "the id of 'b' is not an integer"))
        << flat.status().message();
    test::write_file(root / "added" / "vocab.json", R"({"a": 0, "b": 1})");
    test::write_file(root / "added" / "merges.txt", "a b\n");
    test::write_file(root / "added" / "added_tokens.json", R"({"added_tokens": ["<x>"]})");
    auto added = Qwen2Tokenizer::from_path((root / "added").string());
    ASSERT_FALSE(added);
    EXPECT_TRUE(contains(added.status().message(), "an added token")) << added.status().message();
    test::write_file(root / "config" / "vocab.json", R"({"a": 0, "b": 1})");
    test::write_file(root / "config" / "merges.txt", "a b\n");
    test::write_file(root / "config" / "tokenizer_config.json",
                     R"({"added_tokens_decoder": {"5": "<x>", "6": {"content": "<|im_end|>"}}})");
    auto config = Qwen2Tokenizer::from_path((root / "config").string());
    ASSERT_TRUE(config) << config.status().message();  // the string entry is skipped
    EXPECT_EQ(config->encode("<|im_end|>"), (std::vector<int>{6}));
}

}  // namespace
}  // namespace ggdiff
