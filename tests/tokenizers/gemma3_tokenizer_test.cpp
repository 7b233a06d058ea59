// Gemma 3's tokenizer (LTX-2's text encoder) on the synthetic vocabulary of the ltx_tiny golden
// set (tests/fixtures/ltx_synthetic_tokenizer.py -> tests/golden/ltx_tiny/gemma3_tokenizer.json):
// known ids for a few strings, Gemma 3's special tokens against Gemma 2's, the prompt tokens
// LTX's conditioner makes (<bos> first, A1111 emphasis), the same ids from the vocabulary as a
// GGUF lists it, and the error that says where the tokenizer was looked for.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "test_util.h"
#include "tokenizers/gemma_tokenizer.h"

namespace ggdiff {
namespace {

namespace fs = std::filesystem;

std::string vocab_path() {
    return GGDIFF_SOURCE_DIR "/tests/golden/ltx_tiny/gemma3_tokenizer.json";
}

const GemmaTokenizer& gemma3() {
    static const Result<GemmaTokenizer> tok =
        GemmaTokenizer::from_path(vocab_path(), GemmaVersion::kGemma3);
    if (!tok.ok()) {
        ADD_FAILURE() << tok.status().message();
        std::abort();
    }
    return *tok;
}

// Ids of the synthetic vocabulary: byte <0xNN> is 12 + NN, U+2581 268, letters from 269.
constexpr int kByte = 12;
constexpr int kSpaceId = 268;
int letter(char c) {
    return 269 + (c - 'a');
}

TEST(Gemma3Tokenizer, KnownIds) {
    const GemmaTokenizer& t = gemma3();
    EXPECT_EQ(t.version(), GemmaVersion::kGemma3);
    EXPECT_EQ(t.bos_id(), 2);
    EXPECT_EQ(t.pad_id(), 0);
    EXPECT_EQ(t.vocab_size(), 400u);
    // "a" has no space before it (no merge starts without one); the words do.
    EXPECT_EQ(t.encode("a lovely cat"), (std::vector<int>{letter('a'), 301, 304}));
    EXPECT_EQ(t.encode(" a lovely cat"), (std::vector<int>{295, 301, 304}));
    // Upper case, digits and punctuation fall back to bytes; "lovely" without a space is letters.
    EXPECT_EQ(t.encode("A1,lovely"),
              (std::vector<int>{kByte + 0x41, kByte + 0x31, kByte + 0x2C, letter('l'), letter('o'),
                                letter('v'), letter('e'), letter('l'), letter('y')}));
    // Two spaces are not the "▁▁" special (specials are matched before spaces become U+2581).
    EXPECT_EQ(t.encode("a  cat"), (std::vector<int>{letter('a'), kSpaceId, 304}));
}

TEST(Gemma3Tokenizer, SpecialTokensAreGemma3s) {
    const auto& g3 = GemmaTokenizer::special_tokens(GemmaVersion::kGemma3);
    const auto& g2 = GemmaTokenizer::special_tokens(GemmaVersion::kGemma2);
    EXPECT_EQ(g3.size(), 6671u);
    EXPECT_EQ(g2.size(), 506u);
    EXPECT_EQ(g3[5], "[multimodal]");
    EXPECT_EQ(g3.back(), "<image_soft_token>");
    EXPECT_EQ(g2.back(), "<unused99>");
    auto has = [](const std::vector<std::string>& list, const std::string& s) {
        return std::find(list.begin(), list.end(), s) != list.end();
    };
    for (const char* s : {"<start_of_image>", "<end_of_image>", "<unused6241>", "<footer>",
                          "</iframe>", "[multimodal]"}) {
        EXPECT_TRUE(has(g3, s)) << s;
        EXPECT_FALSE(has(g2, s)) << s;
    }
    for (const char* s : {"[@BOS@]", "<2mass>", "[toxicity=0]"}) {
        EXPECT_FALSE(has(g3, s)) << s;
        EXPECT_TRUE(has(g2, s)) << s;
    }

    const GemmaTokenizer& t = gemma3();
    // Specials in the text become their ids; one missing from the vocabulary reads as 0 (as the
    // reference's map lookup does); "\n\n" is two "\n" (the earlier entry wins a tie).
    EXPECT_EQ(t.encode("<start_of_image>[multimodal]<image_soft_token>"),
              (std::vector<int>{9, 5, 11}));
    EXPECT_EQ(t.encode("<unused500>\n\n"), (std::vector<int>{0, 8, 8}));
    // Gemma 2's [@BOS@] is plain text for Gemma 3: its bytes.
    const std::vector<int> bos_text = {kByte + '[', kByte + '@', kByte + 'B', kByte + 'O',
                                       kByte + 'S', kByte + '@', kByte + ']'};
    EXPECT_EQ(t.encode("[@BOS@]"), bos_text);
    auto g2tok = GemmaTokenizer::from_path(vocab_path(), GemmaVersion::kGemma2);
    ASSERT_TRUE(g2tok.ok()) << g2tok.status().message();
    EXPECT_EQ(g2tok->encode("[@BOS@]"), (std::vector<int>{0}));
    EXPECT_EQ(g2tok->encode("<start_of_image>").size(), 16u);  // bytes for Gemma 2
}

TEST(Gemma3Tokenizer, PromptTokensAsLtxMakesThem) {
    const GemmaTokenizer& t = gemma3();
    GemmaPromptTokens p = gemma3_prompt_tokens(t, "a lovely cat");
    EXPECT_EQ(p.ids, (std::vector<int>{2, letter('a'), 301, 304}));
    EXPECT_EQ(p.weights, (std::vector<float>{1, 1, 1, 1}));
    // Each emphasis run is tokenized alone: "lovely" loses its space.
    p = gemma3_prompt_tokens(t, "a (lovely:1.5) cat");
    EXPECT_EQ(p.ids, (std::vector<int>{2, letter('a'), kSpaceId, letter('l'), letter('o'),
                                       letter('v'), letter('e'), letter('l'), letter('y'), 304}));
    EXPECT_EQ(p.weights, (std::vector<float>{1, 1, 1, 1.5f, 1.5f, 1.5f, 1.5f, 1.5f, 1.5f, 1}));
    // BREAK is no chunk break for LTX: the word, weight -1, as the reference tokenizes it.
    p = gemma3_prompt_tokens(t, "cat BREAK dog");
    ASSERT_EQ(p.ids.size(), p.weights.size());
    EXPECT_EQ(p.ids.front(), 2);
    int breaks = 0;
    for (float w : p.weights) breaks += w == -1.0f;
    EXPECT_EQ(breaks, 5);  // B R E A K as bytes
    // An empty prompt is <bos> alone.
    p = gemma3_prompt_tokens(t, "");
    EXPECT_EQ(p.ids, (std::vector<int>{2}));
}

TEST(Gemma3Tokenizer, GgufVocabularyGivesTheSameIds) {
    // The vocabulary as a llama.cpp GGUF lists it: tokens by id, scores falling with the id
    // (SentencePiece ranks merges by the merged token's score), all types normal.
    std::ifstream in(vocab_path());
    const nlohmann::json j = nlohmann::json::parse(in);
    std::vector<std::string> tokens(j["model"]["vocab"].size());
    for (auto it = j["model"]["vocab"].begin(); it != j["model"]["vocab"].end(); ++it) {
        tokens[it.value().get<size_t>()] = it.key();
    }
    std::vector<float> scores(tokens.size());
    for (size_t i = 0; i < scores.size(); ++i) scores[i] = -static_cast<float>(i);
    auto sp = GemmaTokenizer::from_sentencepiece(tokens, scores, {}, "synthetic gguf",
                                                 GemmaVersion::kGemma3);
    ASSERT_TRUE(sp.ok()) << sp.status().message();
    EXPECT_EQ(sp->version(), GemmaVersion::kGemma3);
    for (const char* s : {"a lovely cat on the hill at sunset", " green tree in a field",
                          "<start_of_image>worst quality, low quality, blurry, distorted",
                          "A dog running on the beach 123"}) {
        EXPECT_EQ(sp->encode(s), gemma3().encode(s)) << s;
    }
}

TEST(Gemma3Tokenizer, SaysWhereItLooked) {
    const fs::path dir = test::fresh_dir("gemma3_tokenizer_missing");
    test::write_file(dir / "gemma-3.gguf", "not a gguf");
    auto r = find_gemma_tokenizer({(dir / "gemma-3.gguf").string()}, "", GemmaVersion::kGemma3);
    ASSERT_FALSE(r.ok());
    const std::string& m = r.status().message();
    EXPECT_NE(m.find("Gemma 3's tokenizer.json"), std::string::npos) << m;
    EXPECT_NE(m.find(dir.string()), std::string::npos) << m;
    EXPECT_NE(m.find((dir / "tokenizer").string()), std::string::npos) << m;
    // Gemma 2's message is unchanged.
    auto r2 = find_gemma_tokenizer({(dir / "gemma-3.gguf").string()}, "");
    ASSERT_FALSE(r2.ok());
    EXPECT_NE(r2.status().message().find("Gemma 2's tokenizer.json"), std::string::npos);
    // A bad --llm-tokenizer is named.
    auto r3 = find_gemma_tokenizer({}, (dir / "nope.json").string(), GemmaVersion::kGemma3);
    ASSERT_FALSE(r3.ok());
    EXPECT_NE(r3.status().message().find("--llm-tokenizer"), std::string::npos);
}

}  // namespace
}  // namespace ggdiff
