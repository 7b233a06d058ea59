#include "tokenizers/prompt_attention.h"

#include <gtest/gtest.h>

namespace ggdiff {
namespace {

using Parsed = std::vector<std::pair<std::string, float>>;

void expect_parsed(const std::string& prompt, const Parsed& want) {
    const Parsed got = parse_prompt_attention(prompt);
    ASSERT_EQ(got.size(), want.size()) << prompt;
    for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_EQ(got[i].first, want[i].first) << prompt << " item " << i;
        EXPECT_NEAR(got[i].second, want[i].second, 1e-5) << prompt << " item " << i;
    }
}

// The examples of A1111's parse_prompt_attention docstring.
TEST(PromptAttention, A1111Docstring) {
    expect_parsed("normal text", {{"normal text", 1.0f}});
    expect_parsed("an (important) word", {{"an ", 1.0f}, {"important", 1.1f}, {" word", 1.0f}});
    expect_parsed("(unbalanced", {{"unbalanced", 1.1f}});
    expect_parsed("\\(literal\\]", {{"(literal]", 1.0f}});
    expect_parsed("(unnecessary)(parens)", {{"unnecessaryparens", 1.1f}});
    expect_parsed("a (((house:1.3)) [on] a (hill:0.5), sun, (((sky))).", {{"a ", 1.0f},
                                                                          {"house", 1.573f},
                                                                          {" ", 1.1f},
                                                                          {"on", 1.0f},
                                                                          {" a ", 1.1f},
                                                                          {"hill", 0.55f},
                                                                          {", sun, ", 1.1f},
                                                                          {"sky", 1.4641f},
                                                                          {".", 1.1f}});
}

TEST(PromptAttention, WeightsAreFloatProductsLikeStableDiffusionCpp) {
    const Parsed p = parse_prompt_attention("((a)) [b] (c:1.3)");
    ASSERT_EQ(p.size(), 5u);
    EXPECT_EQ(p[0].second, 1.1f * 1.1f);
    EXPECT_EQ(p[2].second, 1.0f / 1.1f);
    EXPECT_EQ(p[4].second, 1.3f);
}

TEST(PromptAttention, Emphasis) {
    expect_parsed("", {{"", 1.0f}});
    expect_parsed("(a:1.3)", {{"a", 1.3f}});
    expect_parsed("( a : 1.5 )", {{" a ", 1.5f}});  // A1111 allows spaces around the number
    expect_parsed("(a:+.5)", {{"a", 0.5f}});
    expect_parsed("(a:-1.2)", {{"a", -1.2f}});
    expect_parsed("[[a]]", {{"a", 1.0f / 1.1f / 1.1f}});
    expect_parsed("[a", {{"a", 1.0f / 1.1f}});
    expect_parsed("a) b] c", {{"a) b] c", 1.0f}});  // unopened brackets stay text
    expect_parsed("a:1.5) b", {{"a:1.5) b", 1.0f}});
    expect_parsed("(a:1.5", {{"a:1.5", 1.1f}});  // no ")" after the number: plain text
    expect_parsed("time: 12:30", {{"time: 12:30", 1.0f}});
    expect_parsed("((a:1.5) b)", {{"a", 1.65f}, {" b", 1.1f}});
    expect_parsed("(a:.)", {{"a", 1.0f}});  // no number at all: weight 1 (A1111 today)
}

TEST(PromptAttention, Escapes) {
    expect_parsed("\\(a\\) \\[b\\]", {{"(a) [b]", 1.0f}});
    expect_parsed("a \\\\ b", {{"a \\ b", 1.0f}});
    expect_parsed("a\\b", {{"ab", 1.0f}});  // a lone backslash is dropped, as in A1111
    expect_parsed("(\\(a\\))", {{"(a)", 1.1f}});
}

TEST(PromptAttention, Break) {
    const Parsed p = parse_prompt_attention("a red cube BREAK a horse");
    ASSERT_EQ(p.size(), 3u);
    EXPECT_EQ(p[0], (std::pair<std::string, float>{"a red cube", 1.0f}));
    EXPECT_TRUE(is_break_marker(p[1]));
    EXPECT_EQ(p[2], (std::pair<std::string, float>{"a horse", 1.0f}));

    expect_parsed("a BREAK", {{"a", 1.0f}, {"BREAK", -1.0f}, {"", 1.0f}});
    expect_parsed("BREAK a", {{"", 1.0f}, {"BREAK", -1.0f}, {"a", 1.0f}});
    expect_parsed("a,BREAK\nb", {{"a,", 1.0f}, {"BREAK", -1.0f}, {"b", 1.0f}});
    expect_parsed("a BREAK BREAK b",
                  {{"a", 1.0f}, {"BREAK", -1.0f}, {"", 1.0f}, {"BREAK", -1.0f}, {"b", 1.0f}});
    // Only the upper-case whole word.
    expect_parsed("a break b", {{"a break b", 1.0f}});
    expect_parsed("aBREAK b", {{"aBREAK b", 1.0f}});
    expect_parsed("BREAKFAST", {{"BREAKFAST", 1.0f}});
    expect_parsed("BREAK_", {{"BREAK_", 1.0f}});
    // Brackets around a BREAK scale the text but leave the marker intact.
    expect_parsed("(a BREAK b)", {{"a", 1.1f}, {"BREAK", -1.0f}, {"b", 1.1f}});
    expect_parsed("(a)BREAK(b)",
                  {{"a", 1.1f}, {"", 1.0f}, {"BREAK", -1.0f}, {"", 1.0f}, {"b", 1.1f}});
}

// LongCat's quote spelling: quoted spans one run per character, the rest as it was.
TEST(PromptAttention, SpellQuotedSpans) {
    auto spell = [](const std::string& prompt) {
        return spell_quoted_spans(parse_prompt_attention(prompt));
    };
    EXPECT_EQ(spell("a sign saying \"OPEN\" here"), (Parsed{{"a sign saying ", 1.0f},
                                                            {"\"", 1.0f},
                                                            {"O", 1.0f},
                                                            {"P", 1.0f},
                                                            {"E", 1.0f},
                                                            {"N", 1.0f},
                                                            {"\"", 1.0f},
                                                            {" here", 1.0f}}));
    // Apostrophes inside words are no quotes; the span between two real ones is.
    EXPECT_EQ(spell("don't say 'hi' now"), (Parsed{{"don't say ", 1.0f},
                                                   {"'", 1.0f},
                                                   {"h", 1.0f},
                                                   {"i", 1.0f},
                                                   {"'", 1.0f},
                                                   {" now", 1.0f}}));
    EXPECT_EQ(spell("it's 'rock'n'roll'"), (Parsed{{"it's ", 1.0f},
                                                   {"'", 1.0f},
                                                   {"r", 1.0f},
                                                   {"o", 1.0f},
                                                   {"c", 1.0f},
                                                   {"k", 1.0f},
                                                   {"'", 1.0f},
                                                   {"n", 1.0f},
                                                   {"'", 1.0f},
                                                   {"r", 1.0f},
                                                   {"o", 1.0f},
                                                   {"l", 1.0f},
                                                   {"l", 1.0f},
                                                   {"'", 1.0f}}));
    // Curly quotes and multi-byte characters stay whole characters.
    EXPECT_EQ(spell("\xE2\x80\x9C\xE4\xBD\xA0\xE5\xA5\xBD\xE2\x80\x9D!"),
              (Parsed{{"\xE2\x80\x9C", 1.0f},
                      {"\xE4\xBD\xA0", 1.0f},
                      {"\xE5\xA5\xBD", 1.0f},
                      {"\xE2\x80\x9D", 1.0f},
                      {"!", 1.0f}}));
    // Unclosed, or a curly opener again before the closer: plain text.
    EXPECT_EQ(spell("say \"hi"), (Parsed{{"say \"hi", 1.0f}}));
    EXPECT_EQ(spell("\xE2\x80\x9C"
                    "a"
                    "\xE2\x80\x9C"
                    "b"
                    "\xE2\x80\x9D"),
              (Parsed{{"\xE2\x80\x9C"
                       "a",
                       1.0f},
                      {"\xE2\x80\x9C", 1.0f},
                      {"b", 1.0f},
                      {"\xE2\x80\x9D", 1.0f}}));
    // Emphasis weights carry over to the spelled characters.
    EXPECT_EQ(spell("(\"ab\":1.5) c"),
              (Parsed{{"\"", 1.5f}, {"a", 1.5f}, {"b", 1.5f}, {"\"", 1.5f}, {" c", 1.0f}}));
    EXPECT_EQ(spell(""), (Parsed{{"", 1.0f}}));
}

}  // namespace
}  // namespace ggdiff
