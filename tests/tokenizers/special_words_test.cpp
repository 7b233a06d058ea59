// Textual-inversion names in prompts: split out of the normalized text wherever they occur
// (even inside a word, as the reference engine does), each standing for its rows' ids, and
// weighted with the run they are in.
#include <gtest/gtest.h>

#include "test_util.h"
#include "tokenizers/token_windows.h"

namespace ggdiff {
namespace {

using test::clip;
using Ids = std::vector<int>;
using Piece = ClipTokenizer::Piece;

std::vector<std::pair<std::string, int>> split(const std::string& text,
                                               const std::vector<std::string>& words) {
    std::vector<std::pair<std::string, int>> out;
    for (const Piece& p : ClipTokenizer::split_special(text, words))
        out.emplace_back(p.text, p.word);
    return out;
}

TEST(ClipSpecialWords, SplitFindsWordsEverywhere) {
    using V = std::vector<std::pair<std::string, int>>;
    EXPECT_EQ(split("a horse, xtrastyle", {"xtrastyle"}), (V{{"a horse, ", -1}, {"xtrastyle", 0}}));
    // Inside a word, at the start, twice in a row.
    EXPECT_EQ(split("myxtrastyles", {"xtrastyle"}), (V{{"my", -1}, {"xtrastyle", 0}, {"s", -1}}));
    EXPECT_EQ(split("xtrastylextrastyle", {"xtrastyle"}), (V{{"xtrastyle", 0}, {"xtrastyle", 0}}));
    // The earliest occurrence of any word; at one position the first word of the list.
    EXPECT_EQ(split("b ab abc", {"abc", "b"}),
              (V{{"b", 1}, {" a", -1}, {"b", 1}, {" ", -1}, {"abc", 0}}));
    EXPECT_EQ(split("abc", {"ab", "abc"}), (V{{"ab", 0}, {"c", -1}}));
    EXPECT_EQ(split("plain text", {"none"}), (V{{"plain text", -1}}));
    EXPECT_EQ(split("", {"x"}), V{});
}

TEST(ClipSpecialWords, EncodeReplacesNamesWithTheirIds) {
    const ClipTokenizer& tok = clip();
    ClipSpecialWords sw;
    sw.words = {"xtrastyle", "other"};
    sw.ids = {{49408, 49409}, {49410}};
    const Ids plain = tok.encode("a photograph of an astronaut riding a horse,");
    Ids want = plain;
    want.insert(want.end(), {49408, 49409});
    // The prompt is normalized first (case, spaces) and the name is found in any case.
    EXPECT_EQ(tok.encode("a photograph of an  astronaut riding a horse, XtraStyle", &sw), want);
    // Inside a word: the rest of the word is tokenized on its own.
    Ids inside = tok.encode("my");
    inside.insert(inside.end(), {49408, 49409});
    const Ids rest = tok.encode("s");
    inside.insert(inside.end(), rest.begin(), rest.end());
    EXPECT_EQ(tok.encode("myxtrastyles", &sw), inside);
    // Several names, one of them twice.
    EXPECT_EQ(tok.encode("other xtrastyle other", &sw), (Ids{49410, 49408, 49409, 49410}));
    // Without the words the name is plain text.
    EXPECT_EQ(tok.encode("xtrastyle", nullptr), tok.encode("xtrastyle"));
    EXPECT_NE(tok.encode("xtrastyle", nullptr), (Ids{49408, 49409}));
}

TEST(ClipSpecialWords, WeightsApplyToEveryRow) {
    ClipSpecialWords sw;
    sw.words = {"xtrastyle"};
    sw.ids = {{49408, 49409, 49410}};
    const TokenWindows tw =
        tokenize_weighted(clip(), "horse, (xtrastyle:1.2), [xtrastyle]", 49407, true, &sw);
    const Ids horse = clip().encode("horse,");
    // BOS, "horse ,", 3 rows at 1.2, ",", 3 rows at 1/1.1, EOS.
    size_t at = 1 + horse.size();
    for (int r = 0; r < 3; ++r) {
        EXPECT_EQ(tw.tokens[at + r], 49408 + r);
        EXPECT_FLOAT_EQ(tw.weights[at + r], 1.2f);
    }
    at += 3;
    EXPECT_FLOAT_EQ(tw.weights[at], 1.0f);  // the comma between them
    ++at;
    for (int r = 0; r < 3; ++r) {
        EXPECT_EQ(tw.tokens[at + r], 49408 + r);
        EXPECT_NEAR(tw.weights[at + r], 1.0f / 1.1f, 1e-6f);
    }
    EXPECT_EQ(tw.tokens[at + 3], 49407);
}

}  // namespace
}  // namespace ggdiff
