// Token ids below come from openai/CLIP's simple_tokenizer.py run on the same merges.txt
// (tests/tokenizers/clip_reference.py); the first agrees with the published HF CLIPTokenizer ids.
#include "tokenizers/clip_tokenizer.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_util.h"

namespace ggdiff {
namespace {

using test::clip;
using Ids = std::vector<int>;

TEST(ClipTokenizer, VocabularyLayout) {
    const ClipTokenizer& tok = clip();
    EXPECT_EQ(tok.bos(), 49406);
    EXPECT_EQ(tok.eos(), 49407);
    EXPECT_EQ(tok.vocab_size(), ClipTokenizer::kVocabSize);
    EXPECT_EQ(tok.token_to_id("!"), 0);        // first byte character
    EXPECT_EQ(tok.token_to_id("!</w>"), 256);  // then the same with </w>
    EXPECT_EQ(tok.token_to_id("in"), 512);     // then the merges, in order ("i n")
    EXPECT_EQ(tok.token_to_id("th"), 513);
    EXPECT_EQ(tok.token_to_id("horse</w>"), 4558);
    EXPECT_EQ(tok.id_to_token(49406), "<|startoftext|>");
    EXPECT_EQ(tok.id_to_token(49407), "<|endoftext|>");
    EXPECT_EQ(tok.id_to_token(49408), "");
    EXPECT_EQ(tok.token_to_id("no such token"), -1);
}

TEST(ClipTokenizer, GoldenPrompts) {
    const ClipTokenizer& tok = clip();
    EXPECT_EQ(tok.encode("a photograph of an astronaut riding a horse"),
              (Ids{320, 8853, 539, 550, 18376, 6765, 320, 4558}));
    EXPECT_EQ(tok.encode("blurry, low quality"), (Ids{21977, 267, 1042, 3027}));
    EXPECT_EQ(tok.encode("a red cube on a wooden table"),
              (Ids{320, 736, 11353, 525, 320, 9057, 2175}));
    EXPECT_EQ(tok.encode(""), Ids{});
    EXPECT_EQ(tok.encode("   "), Ids{});
}

TEST(ClipTokenizer, CaseWhitespacePunctuationDigitsApostrophes) {
    const ClipTokenizer& tok = clip();
    // "!!!" and "..." are single punctuation runs, digits split one by one, contractions split.
    EXPECT_EQ(tok.encode("Hello!!! World... 12345 it's we'll they're I'M"),
              (Ids{3306, 995, 1002, 678, 272, 273, 274, 275, 276, 585, 568, 649, 1342, 889, 982,
                   328, 880}));
    EXPECT_EQ(tok.encode("  multiple   spaces\ttab\nnewline  "),
              (Ids{6470, 9006, 14724, 1218, 1148}));
    EXPECT_EQ(tok.encode("A PHOTOGRAPH"), tok.encode("a photograph"));
    // 's matches anywhere, even before a word; a run of punctuation swallows the apostrophe.
    EXPECT_EQ(tok.encode("'sun ''s !'s don't"), (Ids{568, 2271, 8445, 338, 13222, 338, 847, 713}));
    EXPECT_EQ(tok.encode("(masterpiece), [bad]"), (Ids{263, 12066, 2361, 314, 2103, 316}));
    EXPECT_EQ(tok.encode("((word))"), (Ids{13796, 2653, 5167}));
}

TEST(ClipTokenizer, SpecialTokensInText) {
    // Recognized only where a piece starts: after "," the punctuation run swallows "<|".
    EXPECT_EQ(clip().encode("<|endoftext|>x a,<|endoftext|>"),
              (Ids{49407, 343, 320, 11, 27, 347, 40786, 4160, 91, 285}));
    EXPECT_EQ(clip().encode("<|startoftext|>"), (Ids{49406}));
}

TEST(ClipTokenizer, LettersOfAnyScript) {
    const ClipTokenizer& tok = clip();
    EXPECT_EQ(tok.encode("café naïve Москва 東京タワー ΑΘΗΝΑ"),
              (Ids{15304, 1097,  35689, 563, 38018, 13506, 23669, 27152, 39813,
                   27080, 48338, 21078, 105, 34941, 2429,  107,   30391, 138,
                   109,   138,   116,   138, 115,   138,   121,   138,   365}));
    // U+0130 lowercases to "i" + combining dot; other numbers (\p{N}) split singly.
    EXPECT_EQ(tok.encode("İstanbul ½ ² ٣"), (Ids{328, 16384, 11231, 33613, 41175, 149, 352}));
    EXPECT_EQ(tok.encode("emoji 🐱🎨 test"), (Ids{16327, 35710, 13461, 1628}));
    // U+0345 matches no alternative of CLIP's case-insensitive pattern and is skipped.
    EXPECT_EQ(tok.encode("a\u0345b"), tok.encode("a b"));
}

TEST(ClipTokenizer, PreTokenizeAndNormalize) {
    EXPECT_EQ(ClipTokenizer::normalize("  Hello \t\n WORLD  "), "hello world");
    EXPECT_EQ(ClipTokenizer::normalize("ÀÉÎ Σ Ж"), "àéî σ ж");
    EXPECT_EQ(ClipTokenizer::pre_tokenize("it's 2024, ok?!"),
              (std::vector<std::string>{"it", "'s", "2", "0", "2", "4", ",", "ok", "?!"}));
    EXPECT_EQ(ClipTokenizer::pre_tokenize("naïve東京"), (std::vector<std::string>{"naïve東京"}));
}

TEST(ClipTokenizer, InvalidUtf8DoesNotCrash) {
    const std::string bad = std::string("ab") + char(0xFF) + char(0xC3) + "cd";
    const Ids ids = clip().encode(bad);
    EXPECT_FALSE(ids.empty());
    EXPECT_EQ(clip().decode(ids), "ab \xEF\xBF\xBD\xEF\xBF\xBD cd");  // U+FFFD twice, own piece
}

TEST(ClipTokenizer, DecodeRoundTrip) {
    const ClipTokenizer& tok = clip();
    for (const char* s : {"a photograph of an astronaut riding a horse", "café naïve москва",
                          "東京タワー", "emoji 🐱🎨 test"}) {
        EXPECT_EQ(tok.decode(tok.encode(s)), s);
    }
    // Every piece is its own word on decode, so punctuation gains a space.
    EXPECT_EQ(tok.decode(tok.encode("blurry, low quality")), "blurry , low quality");
    // BOS/EOS are skipped.
    Ids with_specials = tok.encode("a horse");
    with_specials.insert(with_specials.begin(), tok.bos());
    with_specials.push_back(tok.eos());
    EXPECT_EQ(tok.decode(with_specials), "a horse");
    EXPECT_EQ(tok.decode({}), "");
}

TEST(ClipTokenizer, FromMergesTextMatchesFile) {
    auto tok = ClipTokenizer::from_merges_text(test::read_file(test::clip_merges_path()));
    ASSERT_TRUE(tok) << tok.status().message();
    EXPECT_EQ(tok->encode("a photograph of an astronaut riding a horse"),
              clip().encode("a photograph of an astronaut riding a horse"));
    // Windows line ends are accepted.
    std::string crlf;
    for (char c : test::read_file(test::clip_merges_path())) {
        if (c == '\n') crlf += '\r';
        crlf += c;
    }
    auto tok2 = ClipTokenizer::from_merges_text(crlf);
    ASSERT_TRUE(tok2) << tok2.status().message();
    EXPECT_EQ(tok2->encode("blurry, low quality"), (Ids{21977, 267, 1042, 3027}));
}

// vocab.json / tokenizer.json written from the merges-built vocabulary load to the same ids.
TEST(ClipTokenizer, FromVocabAndMergesAndTokenizerJson) {
    const ClipTokenizer& ref = clip();
    nlohmann::json vocab = nlohmann::json::object();
    for (int id = 0; id < ref.vocab_size(); ++id) vocab[ref.id_to_token(id)] = id;
    const auto dir = test::fresh_dir("vocab_and_merges");
    test::write_file(dir / "vocab.json", vocab.dump());
    const std::string merges_text = test::read_file(test::clip_merges_path());
    test::write_file(dir / "merges.txt", merges_text);

    const std::string prompt = "a photograph of an astronaut riding a horse, café 123";
    auto a = ClipTokenizer::from_vocab_and_merges((dir / "vocab.json").string(),
                                                  (dir / "merges.txt").string());
    ASSERT_TRUE(a) << a.status().message();
    EXPECT_EQ(a->encode(prompt), ref.encode(prompt));
    EXPECT_EQ(a->bos(), 49406);
    EXPECT_EQ(a->eos(), 49407);

    // tokenizer.json, once with "a b" merges and once with ["a", "b"] pairs.
    nlohmann::json merges_str = nlohmann::json::array();
    nlohmann::json merges_pair = nlohmann::json::array();
    size_t pos = merges_text.find('\n') + 1;
    while (pos < merges_text.size()) {
        size_t end = merges_text.find('\n', pos);
        if (end == std::string::npos) end = merges_text.size();
        const std::string line = merges_text.substr(pos, end - pos);
        if (!line.empty()) {
            merges_str.push_back(line);
            const size_t sp = line.find(' ');
            merges_pair.push_back({line.substr(0, sp), line.substr(sp + 1)});
        }
        pos = end + 1;
    }
    for (const auto& merges : {merges_str, merges_pair}) {
        nlohmann::json tj = {{"model",
                              {{"type", "BPE"},
                               {"vocab", vocab},
                               {"merges", merges},
                               {"end_of_word_suffix", "</w>"}}}};
        test::write_file(dir / "tj" / "tokenizer.json", tj.dump());
        auto b = ClipTokenizer::from_tokenizer_json((dir / "tj" / "tokenizer.json").string());
        ASSERT_TRUE(b) << b.status().message();
        EXPECT_EQ(b->encode(prompt), ref.encode(prompt));
        // from_path on the folder and on the file.
        auto c = ClipTokenizer::from_path((dir / "tj").string());
        ASSERT_TRUE(c) << c.status().message();
        EXPECT_EQ(c->encode(prompt), ref.encode(prompt));
    }

    for (const auto& p : {dir, dir / "vocab.json", dir / "merges.txt"}) {
        auto d = ClipTokenizer::from_path(p.string());
        ASSERT_TRUE(d) << p << ": " << d.status().message();
        EXPECT_EQ(d->encode(prompt), ref.encode(prompt));
    }
}

TEST(ClipTokenizer, Errors) {
    auto missing = ClipTokenizer::from_merges_file("/nonexistent/merges.txt");
    ASSERT_FALSE(missing);
    EXPECT_NE(missing.status().message().find("cannot read '/nonexistent/merges.txt'"),
              std::string::npos)
        << missing.status().message();

    const std::string full = test::read_file(test::clip_merges_path());
    const auto dir = test::fresh_dir("errors");

    // Truncated: the header and 999 merges.
    size_t pos = 0;
    for (int i = 0; i < 1000; ++i) pos = full.find('\n', pos) + 1;
    test::write_file(dir / "short.txt", full.substr(0, pos));
    auto truncated = ClipTokenizer::from_merges_file((dir / "short.txt").string());
    ASSERT_FALSE(truncated);
    EXPECT_NE(truncated.status().message().find("only 999 merges"), std::string::npos)
        << truncated.status().message();
    EXPECT_NE(truncated.status().message().find((dir / "short.txt").string()), std::string::npos);

    // A line that is not a merge.
    std::string bad_line = full;
    const size_t line3 = bad_line.find("t h\n");
    bad_line.replace(line3, 3, "t_h");
    auto malformed = ClipTokenizer::from_merges_text(bad_line);
    ASSERT_FALSE(malformed);
    EXPECT_NE(malformed.status().message().find("line 3"), std::string::npos)
        << malformed.status().message();

    // Merges in the wrong order: "th e</w>" before "t h" made "th".
    std::string reordered = full;
    reordered.replace(reordered.find("th e</w>\n"), 9, "");
    reordered.insert(reordered.find('\n') + 1, "th e</w>\n");
    auto corrupt = ClipTokenizer::from_merges_text(reordered);
    ASSERT_FALSE(corrupt);
    EXPECT_NE(corrupt.status().message().find("corrupt"), std::string::npos)
        << corrupt.status().message();

    // A GPT-2 style list (no </w> word ends).
    std::string gpt2 = "#version: 0.2\n";
    for (int i = 0; i < ClipTokenizer::kNumMerges; ++i) gpt2 += "\xC4\xA0 t\n";
    auto not_clip = ClipTokenizer::from_merges_text(gpt2);
    ASSERT_FALSE(not_clip);
    EXPECT_NE(not_clip.status().message().find("</w>"), std::string::npos);

    // Bad JSON, wrong JSON, missing paths.
    test::write_file(dir / "vocab.json", "{not json");
    auto bad_json = ClipTokenizer::from_vocab_and_merges((dir / "vocab.json").string(),
                                                         test::clip_merges_path());
    ASSERT_FALSE(bad_json);
    EXPECT_NE(bad_json.status().message().find("not valid JSON"), std::string::npos);
    test::write_file(dir / "other.json", "{\"version\": 1}");
    EXPECT_FALSE(ClipTokenizer::from_tokenizer_json((dir / "other.json").string()));
    EXPECT_FALSE(ClipTokenizer::from_path((dir / "nothing_here").string()));
    EXPECT_FALSE(ClipTokenizer::from_path(dir.string()));  // folder without merges
    EXPECT_FALSE(ClipTokenizer::from_merges_file(dir.string()));
}

}  // namespace
}  // namespace ggdiff
