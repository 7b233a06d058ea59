// The SentencePiece Unigram tokenizer from a tokenizer.json: Viterbi segmentation by
// piece scores, Metaspace word prefixes, unknown characters, the T5 chunk layout, and the
// search for the T5 tokenizer next to the model files.
#include "tokenizers/unigram_tokenizer.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "tokenizers/find_tokenizer.h"

namespace ggdiff {
namespace {

namespace fs = std::filesystem;

const std::string kSpace = "\xe2\x96\x81";  // U+2581

std::string synthetic_path() {
    return std::string(GGDIFF_SHARED_DIR) + "/data/t5_synthetic/tokenizer.json";
}

// A tiny vocabulary: ids 0-2 specials, then pieces with chosen scores.
UnigramTokenizer tiny(const std::string& pre_tokenizer = "") {
    const std::string json =
        R"({"model":{"type":"Unigram","unk_id":2,"vocab":[["<pad>",0.0],["</s>",0.0],["<unk>",0.0],)"
        R"([")" +
        kSpace + R"(",-2.0],[")" + kSpace + R"(ab",-3.0],[")" + kSpace +
        R"(a",-1.0],)"
        R"(["b",-1.5],["c",-4.0],["bc",-4.5]]})" +
        (pre_tokenizer.empty() ? "" : R"(,"pre_tokenizer":)" + pre_tokenizer) + "}";
    auto t = UnigramTokenizer::from_json_text(json, "tiny");
    EXPECT_TRUE(t.ok()) << t.status().message();
    return std::move(t).value();
}

TEST(UnigramTokenizer, ViterbiPicksTheBestTotalScore) {
    const UnigramTokenizer t = tiny();
    // "▁ab": "▁a" + "b" (-2.5) beats the single piece "▁ab" (-3).
    EXPECT_EQ(t.encode("ab"), (std::vector<int>{5, 6}));
    // "▁abc": ▁a b c (-6.5) vs ▁a bc (-5.5) vs ▁ab c (-7): "bc" wins.
    EXPECT_EQ(t.encode("abc"), (std::vector<int>{5, 8}));
    EXPECT_EQ(t.eos_id(), 1);
    EXPECT_EQ(t.pad_id(), 0);
    EXPECT_EQ(t.vocab_size(), 9u);
}

TEST(UnigramTokenizer, WordsGetTheMetaspacePrefix) {
    const UnigramTokenizer t = tiny();
    // Runs of whitespace separate words; none leaves an empty word behind.
    EXPECT_EQ(t.encode("a \t  a\n"), (std::vector<int>{5, 5}));
    // A leading space leaves a lone prefix token first, as the reference engine's Metaspace
    // step does (the " house" segment of a weighted prompt "a (red:1.4) house").
    EXPECT_EQ(t.encode("  a"), (std::vector<int>{3, 5}));
    // A text without words is the bare prefix, as the reference engine tokenizes an empty
    // prompt (its T5 input is then "\u2581" + EOS, which the SD3 goldens' CFG pass depends on).
    EXPECT_EQ(t.encode(""), (std::vector<int>{3}));
    EXPECT_EQ(t.encode("   "), (std::vector<int>{3}));
    // prepend_scheme "never": the first word has no prefix, later ones do.
    const UnigramTokenizer never =
        tiny(R"({"type":"Metaspace","replacement":")" + kSpace + R"(","prepend_scheme":"never"})");
    EXPECT_EQ(never.encode("b a"), (std::vector<int>{6, 5}));
    EXPECT_TRUE(never.encode("").empty());
    // A Metaspace inside a Sequence is found (the real T5 tokenizer.json layout).
    const UnigramTokenizer seq =
        tiny(R"({"type":"Sequence","pretokenizers":[{"type":"WhitespaceSplit"},)"
             R"({"type":"Metaspace","replacement":")" +
             kSpace + R"(","prepend_scheme":"first"}]})");
    EXPECT_EQ(seq.encode("a a"), (std::vector<int>{5, 5}));
}

TEST(UnigramTokenizer, UnknownCharactersBecomeOneUnknownToken) {
    const UnigramTokenizer t = tiny();
    // "▁" then "xyé" (no pieces) then "b": one <unk> for the run.
    EXPECT_EQ(t.encode("xy\xc3\xa9"
                       "b"),
              (std::vector<int>{3, 2, 6}));
}

TEST(UnigramTokenizer, SyntheticT5Tokenizer) {
    auto t = UnigramTokenizer::from_file(synthetic_path());
    ASSERT_TRUE(t.ok()) << t.status().message();
    // The golden prompts.
    EXPECT_EQ(t->encode("a photograph of an astronaut riding a horse"),
              (std::vector<int>{4, 134, 7, 5, 77, 169, 4, 48}));
    const std::vector<int> cats = t->encode("two cats sleeping");
    ASSERT_FALSE(cats.empty());
    EXPECT_EQ(t->piece(cats.back()), kSpace + "sleeping");
}

TEST(UnigramTokenizer, BadFilesAreNamed) {
    auto missing = UnigramTokenizer::from_file("/nonexistent/tokenizer.json");
    EXPECT_FALSE(missing.ok());
    EXPECT_NE(missing.status().message().find("/nonexistent/tokenizer.json"), std::string::npos);
    auto bpe = UnigramTokenizer::from_json_text(R"({"model":{"type":"BPE","vocab":{}}})", "x.json");
    ASSERT_FALSE(bpe.ok());
    EXPECT_NE(bpe.status().message().find("BPE"), std::string::npos);
    EXPECT_NE(bpe.status().message().find("x.json"), std::string::npos);
    EXPECT_FALSE(UnigramTokenizer::from_json_text("not json", "y").ok());
    EXPECT_FALSE(
        UnigramTokenizer::from_json_text(R"({"model":{"type":"Unigram","vocab":[["a"]]}})", "z")
            .ok());
}

TEST(T5Chunks, EosAfterEvery255TokensAndPadding) {
    const T5Chunks empty = make_t5_chunks({}, {}, 1, 0, 256);
    EXPECT_EQ(empty.n_chunks, 1);
    ASSERT_EQ(empty.tokens.size(), 256u);
    EXPECT_EQ(empty.tokens[0], 1);
    EXPECT_EQ(empty.tokens[1], 0);

    const T5Chunks short_ = make_t5_chunks({7, 8}, {1.5f, 1.0f}, 1, 0, 8);
    EXPECT_EQ(short_.tokens, (std::vector<int>{7, 8, 1, 0, 0, 0, 0, 0}));
    EXPECT_EQ(short_.weights[0], 1.5f);
    EXPECT_EQ(short_.weights[2], 1.0f);

    // Exactly one chunk's worth, then one more token.
    std::vector<int> seven(7, 9);
    EXPECT_EQ(make_t5_chunks(seven, {}, 1, 0, 8).n_chunks, 1);
    seven.push_back(5);
    const T5Chunks two = make_t5_chunks(seven, {}, 1, 0, 8);
    EXPECT_EQ(two.n_chunks, 2);
    EXPECT_EQ(two.tokens, (std::vector<int>{9, 9, 9, 9, 9, 9, 9, 1, 5, 1, 0, 0, 0, 0, 0, 0}));
}

TEST(FindT5Tokenizer, FlagNextToTheWeightsAndDiffusersFolders) {
    const fs::path root = test::fresh_dir("find_t5");
    test::write_file(root / "mine.json", "{}");
    test::write_file(root / "flagdir" / "tokenizer.json", "{}");
    test::write_file(root / "pipe" / "tokenizer_2" / "tokenizer.json", "{}");
    test::write_file(root / "pipe" / "text_encoder_2" / "model.safetensors", "x");
    test::write_file(root / "models" / "t5xxl.safetensors", "x");
    test::write_file(root / "models" / "tokenizer.json", "{}");
    test::write_file(root / "bare" / "t5.safetensors", "x");

    auto flag = find_t5_tokenizer({}, (root / "mine.json").string());
    ASSERT_TRUE(flag.ok());
    EXPECT_EQ(*flag, (root / "mine.json").string());
    auto dir = find_t5_tokenizer({}, (root / "flagdir").string());
    ASSERT_TRUE(dir.ok());
    EXPECT_EQ(*dir, (root / "flagdir" / "tokenizer.json").string());
    auto pipe_flag = find_t5_tokenizer({}, (root / "pipe").string());
    ASSERT_TRUE(pipe_flag.ok());
    EXPECT_EQ(*pipe_flag, (root / "pipe" / "tokenizer_2" / "tokenizer.json").string());

    // Next to the T5 file; a diffusers text_encoder_2/ next to tokenizer_2/; the pipeline.
    auto beside = find_t5_tokenizer({(root / "models" / "t5xxl.safetensors").string()}, "");
    ASSERT_TRUE(beside.ok());
    EXPECT_EQ(*beside, (root / "models" / "tokenizer.json").string());
    auto te2 =
        find_t5_tokenizer({(root / "pipe" / "text_encoder_2" / "model.safetensors").string()}, "");
    ASSERT_TRUE(te2.ok());
    EXPECT_EQ(fs::canonical(*te2), fs::canonical(root / "pipe" / "tokenizer_2" / "tokenizer.json"));
    auto pipeline = find_t5_tokenizer({"", (root / "pipe").string()}, "");
    ASSERT_TRUE(pipeline.ok());

    // Nothing to find: the error names the flag and where it looked.
    auto none = find_t5_tokenizer({(root / "bare" / "t5.safetensors").string()}, "");
    ASSERT_FALSE(none.ok());
    EXPECT_NE(none.status().message().find("--t5xxl-tokenizer"), std::string::npos);
    EXPECT_NE(none.status().message().find((root / "bare").string()), std::string::npos);
    auto bad = find_t5_tokenizer({}, (root / "nothing").string());
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find("no such file"), std::string::npos);
}

// A Chroma pipeline's one text encoder is T5: its tokenizer/ is T5's (a FLUX pipeline's
// tokenizer/ beside a CLIP text_encoder/ is not).
TEST(FindT5Tokenizer, TokenizerBesideAT5TextEncoder) {
    const fs::path root = test::fresh_dir("find_t5_chroma");
    test::write_file(root / "chroma" / "text_encoder" / "config.json",
                     R"({"architectures": ["T5EncoderModel"], "model_type": "t5"})");
    test::write_file(root / "chroma" / "text_encoder" / "model.safetensors", "x");
    test::write_file(root / "chroma" / "tokenizer" / "tokenizer.json", "{}");
    test::write_file(root / "clip" / "text_encoder" / "config.json",
                     R"({"model_type": "clip_text_model"})");
    test::write_file(root / "clip" / "tokenizer" / "tokenizer.json", "{}");
    const std::string want = (root / "chroma" / "tokenizer" / "tokenizer.json").string();

    auto pipeline = find_t5_tokenizer({"", (root / "chroma").string()}, "");
    ASSERT_TRUE(pipeline.ok()) << pipeline.status().message();
    EXPECT_EQ(fs::canonical(*pipeline), fs::canonical(want));
    auto te =
        find_t5_tokenizer({(root / "chroma" / "text_encoder" / "model.safetensors").string()}, "");
    ASSERT_TRUE(te.ok()) << te.status().message();
    EXPECT_EQ(fs::canonical(*te), fs::canonical(want));
    auto flag = find_t5_tokenizer({}, (root / "chroma").string());
    ASSERT_TRUE(flag.ok()) << flag.status().message();
    EXPECT_EQ(fs::canonical(*flag), fs::canonical(want));

    EXPECT_FALSE(find_t5_tokenizer({(root / "clip").string()}, "").ok());
    EXPECT_FALSE(find_t5_tokenizer({}, (root / "clip").string()).ok());
}

}  // namespace
}  // namespace ggdiff
