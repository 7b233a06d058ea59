// Mistral's Tekken tokenizer on a synthetic vocabulary (tests/support/mistral_synthetic.h)
// written both as tekken.json and as the tokenizer.json converted from it: the pre-tokenizer
// splits (expected values from Python's `regex` module with Tekken's pattern), control tokens
// in the text, BOS, bytes outside every merge, the vocabulary cut, both file kinds giving the
// same ids, the embedded-text loader, errors, and where the tokenizer is looked for.
#include "tokenizers/mistral_tokenizer.h"

#include <gtest/gtest.h>

#include "../support/mistral_synthetic.h"
#include "test_util.h"
#include "tokenizers/find_tokenizer.h"

namespace ggdiff {
namespace {

namespace fs = std::filesystem;
using test::synthetic_id;

struct Both {
    MistralTokenizer tekken;
    MistralTokenizer hf;
};

const Both& both() {
    static const Both* b = [] {
        const fs::path dir = test::fresh_dir("mistral_tokenizer_files");
        test::write_text(dir / "tekken.json", test::synthetic_tekken_json());
        test::write_text(dir / "hf" / "tokenizer.json", test::synthetic_tokenizer_json());
        auto t = MistralTokenizer::from_path((dir / "tekken.json").string());
        auto h = MistralTokenizer::from_path((dir / "hf" / "tokenizer.json").string());
        if (!t || !h) {
            ADD_FAILURE() << (t ? h.status().message() : t.status().message());
            std::abort();
        }
        return new Both{std::move(t).value(), std::move(h).value()};
    }();
    return *b;
}

TEST(MistralTokenizer, PatternIsTekkens) {
    EXPECT_STREQ(MistralTokenizer::pattern(), test::kTekkenPattern);
}

TEST(MistralTokenizer, PreTokenizerSplitsAsTheRegex) {
    const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
        {"Hello World", {"Hello", " World"}},
        {"HelloWorld", {"Hello", "World"}},
        {"HELLO world", {"HELLO", " world"}},
        {"abc123", {"abc", "1", "2", "3"}},
        {"path/to/x", {"path", "/to", "/x"}},
        {"don't I'M", {"don", "'t", " I", "'M"}},
        {"e\u0301te", {"e\u0301te"}},  // a combining mark stays in the word
        {"!!\n/ x", {"!!\n/", " x"}},
        {"a  \n\n  b   c  ", {"a", "  \n\n", " ", " b", "  ", " c", "  "}},
        {"\u65e5\u672c\u8a9e\u30c6\u30ad\u30b9\u30c8",
         {"\u65e5\u672c\u8a9e\u30c6\u30ad\u30b9\u30c8"}},
        {"\u03a9mega \u03a3\u0399\u0393\u039c\u0391\u03c3",
         {"\u03a9mega", " \u03a3\u0399\u0393\u039c\u0391\u03c3"}},
        {"x\tyZ\u01c5ab", {"x", "\ty", "Z\u01c5ab"}},  // U+01C5 is titlecase
        {" 12.5%", {" ", "1", "2", ".", "5", "%"}},
        {"ab\r\n\r\ncd", {"ab", "\r\n\r\n", "cd"}},
        {"\u02b0ab", {"\u02b0ab"}},  // a modifier letter (Lm) is in both classes
    };
    for (const auto& [text, pieces] : cases) {
        EXPECT_EQ(MistralTokenizer::pre_tokenize(text), pieces) << text;
    }
}

TEST(MistralTokenizer, SpecialTokensAndBos) {
    for (const MistralTokenizer* t : {&both().tekken, &both().hf}) {
        EXPECT_EQ(t->bos_id(), 1);
        EXPECT_EQ(t->token_to_id("[INST]"), 3);
        EXPECT_EQ(t->token_to_id("[/INST]"), 4);
        EXPECT_EQ(t->token_to_id("[SYSTEM_PROMPT]"), 17);
        EXPECT_EQ(t->token_to_id("[/SYSTEM_PROMPT]"), 18);
        EXPECT_EQ(t->token_to_id("<SPECIAL_21>"), 21);  // unlisted control ids get names
        EXPECT_EQ(t->special_count(), 24u);
        EXPECT_TRUE(t->is_special(18));
        EXPECT_FALSE(t->is_special(24));
        const std::vector<int> ids =
            t->encode("<s>[SYSTEM_PROMPT]at[/SYSTEM_PROMPT][INST]Hello world[/INST]<SPECIAL_21>");
        const std::vector<int> want = {
            1, 17, synthetic_id("at"), 18, 3, synthetic_id("Hello"), synthetic_id(" world"), 4, 21};
        EXPECT_EQ(ids, want);
        // A control token's name with a character missing is plain text.
        const std::vector<int> plain = t->encode("[INST");
        const std::vector<int> want_plain = {synthetic_id("[I"), synthetic_id("N"),
                                             synthetic_id("S"), synthetic_id("T")};
        EXPECT_EQ(plain, want_plain);
        EXPECT_TRUE(t->encode("").empty());
    }
}

TEST(MistralTokenizer, MergesByRank) {
    for (const MistralTokenizer* t : {&both().tekken, &both().hf}) {
        // " worlds" is no token: its bytes merge up to " world", then "s" stays alone.
        std::vector<int> want = {synthetic_id(" world"), synthetic_id("s")};
        EXPECT_EQ(t->encode(" worlds"), want);
        want = {synthetic_id(" red"), synthetic_id(" apple"), synthetic_id(" cat")};
        EXPECT_EQ(t->encode(" red apple cat"), want);
        // "cd" is past config.default_vocab_size: not a token.
        want = {synthetic_id("c"), synthetic_id("d")};
        EXPECT_EQ(t->encode("cd"), want);
        EXPECT_EQ(t->token_to_id(test::to_symbols("cd")), -1);
    }
}

TEST(MistralTokenizer, BytesOutsideTheMergesAreByteTokens) {
    for (const MistralTokenizer* t : {&both().tekken, &both().hf}) {
        const std::string text = "\u65e5 \xF0\x9F\x98\x80";  // CJK, then an emoji
        std::vector<int> want;
        for (unsigned char b : std::string(text)) want.push_back(synthetic_id(std::string(1, b)));
        EXPECT_EQ(t->encode(text), want);
        EXPECT_EQ(t->decode(want), text);
    }
}

TEST(MistralTokenizer, TekkenAndTokenizerJsonAgree) {
    const std::vector<std::string> texts = {
        "[SYSTEM_PROMPT]You are an AI that reasons about image descriptions. You give structured "
        "responses focusing on object relationships, object\nattribution and actions without "
        "speculation.[/SYSTEM_PROMPT][INST]a red apple on a cat, Hello World![/INST]",
        "HelloWorld HELLO worlds\n\n\n  in the   rain 1234 caf\u00e9 \u00e9t\u00e9",
        "<s><s>[/INST][INST]</s> [IMG] <unk>",
        "\t\r\n apple  apple\napple/applesauce",
    };
    for (const std::string& text : texts) {
        const std::vector<int> a = both().tekken.encode(text);
        EXPECT_EQ(a, both().hf.encode(text)) << text;
        EXPECT_EQ(both().tekken.decode(a), text);
        EXPECT_EQ(both().hf.decode(a), text);
    }
}

TEST(MistralTokenizer, FromEmbeddedText) {
    auto t = MistralTokenizer::from_tekken_text(test::synthetic_tekken_json(), "tekken_model");
    ASSERT_TRUE(t.ok()) << t.status().message();
    EXPECT_EQ(t->encode("Hello"), std::vector<int>{synthetic_id("Hello")});
    EXPECT_EQ(t->vocab_size(), 24u + 256u + test::synthetic_kept_merges());
}

TEST(MistralTokenizer, ErrorsNameTheProblem) {
    auto bad = MistralTokenizer::from_tekken_text("{\"config\": {}}", "X");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find("not a tekken.json"), std::string::npos)
        << bad.status().message();

    nlohmann::json j = nlohmann::json::parse(test::synthetic_tekken_json());
    j["vocab"][270]["token_bytes"] = "!!!";
    bad = MistralTokenizer::from_tekken_text(j.dump(), "X");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find("vocab entry 270"), std::string::npos)
        << bad.status().message();

    j = nlohmann::json::parse(test::synthetic_tekken_json());
    j["vocab"][65]["token_bytes"] = "Qg==";  // "B" where "A" belongs
    bad = MistralTokenizer::from_tekken_text(j.dump(), "X");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find("the first 256 are the bytes"), std::string::npos);

    j = nlohmann::json::parse(test::synthetic_tekken_json());
    j["config"]["default_vocab_size"] = 100000;
    bad = MistralTokenizer::from_tekken_text(j.dump(), "X");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find("regular tokens"), std::string::npos);

    j = nlohmann::json::parse(test::synthetic_tekken_json());
    j["special_tokens"][1]["token_str"] = "<bos>";  // no <s>
    bad = MistralTokenizer::from_tekken_text(j.dump(), "X");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find("no <s>"), std::string::npos);

    // Odd types where flags and names belong are not fatal: the defaults apply.
    nlohmann::json hf = nlohmann::json::parse(test::synthetic_tokenizer_json());
    hf["model"]["ignore_merges"] = "yes";
    hf["pre_tokenizer"]["type"] = 5;
    hf["pre_tokenizer"]["pretokenizers"][0]["type"] = nullptr;
    const fs::path odd = test::fresh_dir("mistral_tokenizer_odd") / "tokenizer.json";
    test::write_text(odd, hf.dump());
    auto loaded = MistralTokenizer::from_path(odd.string());
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    EXPECT_EQ(loaded->encode("Hello world"), both().tekken.encode("Hello world"));

    // A Qwen2 tokenizer.json is no Mistral tokenizer.
    auto qwen = MistralTokenizer::from_path(std::string(GGDIFF_SHARED_DIR) +
                                            "/data/qwen2_synthetic/vocab.json");
    EXPECT_FALSE(qwen.ok());
}

TEST(MistralTokenizer, FinderLooksBesideTheModelAndByFlag) {
    const fs::path root = test::fresh_dir("mistral_tokenizer_find");
    // A diffusers-like layout: text_encoder/ beside tokenizer/ (tokenizer.json).
    test::write_file(root / "pipe" / "text_encoder" / "model.safetensors", "x");
    test::write_text(root / "pipe" / "tokenizer" / "tokenizer.json",
                     test::synthetic_tokenizer_json());
    auto p = find_mistral_tokenizer(
        {(root / "pipe" / "text_encoder" / "model.safetensors").string()}, "");
    ASSERT_TRUE(p.ok()) << p.status().message();
    EXPECT_EQ(fs::path(*p), root / "pipe" / "tokenizer");
    ASSERT_TRUE(MistralTokenizer::from_path(*p).ok());

    // tekken.json next to the --llm file.
    test::write_file(root / "te" / "mistral.safetensors", "x");
    test::write_text(root / "te" / "tekken.json", test::synthetic_tekken_json());
    p = find_mistral_tokenizer({(root / "te" / "mistral.safetensors").string()}, "");
    ASSERT_TRUE(p.ok()) << p.status().message();
    EXPECT_EQ(fs::path(*p), root / "te");

    // The flag: a file, or a folder.
    p = find_mistral_tokenizer({}, (root / "te" / "tekken.json").string());
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(*p, (root / "te" / "tekken.json").string());
    p = find_mistral_tokenizer({}, (root / "pipe").string());
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(fs::path(*p), root / "pipe" / "tokenizer");
    p = find_mistral_tokenizer({}, (root / "nowhere").string());
    ASSERT_FALSE(p.ok());
    EXPECT_NE(p.status().message().find("--llm-tokenizer"), std::string::npos);

    // Nothing there: the error names where it looked.
    test::write_file(root / "empty" / "m.safetensors", "x");
    p = find_mistral_tokenizer({(root / "empty" / "m.safetensors").string()}, "");
    ASSERT_FALSE(p.ok());
    EXPECT_NE(p.status().message().find("tekken.json"), std::string::npos);
    EXPECT_NE(p.status().message().find((root / "empty").string()), std::string::npos)
        << p.status().message();
}

}  // namespace
}  // namespace ggdiff
