#include "tokenizers/token_windows.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace ggdiff {
namespace {

using test::clip;
using Ids = std::vector<int>;
constexpr int kBos = 49406;
constexpr int kEos = 49407;
constexpr int kPadSd1 = 49407;
constexpr int kPadSd2 = 0;

Ids window(const Ids& body, int pad, int eos = kEos) {
    Ids w{kBos};
    w.insert(w.end(), body.begin(), body.end());
    w.push_back(eos);
    w.resize(kClipWindowLength, pad);
    return w;
}

TEST(TokenWindows, EmptyPrompt) {
    const TokenWindows sd1 = tokenize_weighted(clip(), "", kPadSd1);
    EXPECT_EQ(sd1.n_windows, 1);
    EXPECT_EQ(sd1.tokens, window({}, kPadSd1));
    EXPECT_EQ(sd1.weights, std::vector<float>(kClipWindowLength, 1.0f));
    const TokenWindows sd2 = tokenize_weighted(clip(), "", kPadSd2);
    EXPECT_EQ(sd2.tokens, window({}, kPadSd2));
    EXPECT_EQ(sd2.tokens[1], kEos);
    EXPECT_EQ(sd2.tokens[2], 0);
}

TEST(TokenWindows, GoldenPrompt) {
    const Ids ids{320, 8853, 539, 550, 18376, 6765, 320, 4558};
    const TokenWindows sd1 =
        tokenize_weighted(clip(), "a photograph of an astronaut riding a horse", kPadSd1);
    EXPECT_EQ(sd1.n_windows, 1);
    EXPECT_EQ(sd1.tokens, window(ids, kPadSd1));
    EXPECT_EQ(sd1.weights, std::vector<float>(kClipWindowLength, 1.0f));
    const TokenWindows sd2 =
        tokenize_weighted(clip(), "a photograph of an astronaut riding a horse", kPadSd2);
    EXPECT_EQ(sd2.tokens, window(ids, kPadSd2));
    const TokenWindows neg = tokenize_weighted(clip(), "blurry, low quality", kPadSd1);
    EXPECT_EQ(neg.tokens, window({21977, 267, 1042, 3027}, kPadSd1));
}

TEST(TokenWindows, Weights) {
    const TokenWindows w = tokenize_weighted(clip(), "a (red:1.5) [cube]", kPadSd1);
    EXPECT_EQ(w.tokens, window({320, 736, 11353}, kPadSd1));
    ASSERT_EQ(w.weights.size(), 77u);
    EXPECT_EQ(w.weights[0], 1.0f);
    EXPECT_EQ(w.weights[1], 1.0f);
    EXPECT_EQ(w.weights[2], 1.5f);
    EXPECT_EQ(w.weights[3], 1.0f / 1.1f);
    EXPECT_EQ(w.weights[4], 1.0f);  // EOS
    EXPECT_EQ(w.weights[76], 1.0f);
    // Runs are encoded separately: "(masterpiece), [bad]" loses its brackets.
    const TokenWindows m = tokenize_weighted(clip(), "(masterpiece), [bad]", kPadSd1);
    EXPECT_EQ(m.tokens, window({12066, 267, 2103}, kPadSd1));
    EXPECT_EQ(m.weights[1], 1.1f);
    EXPECT_EQ(m.weights[2], 1.0f);
    EXPECT_EQ(m.weights[3], 1.0f / 1.1f);
}

// n copies of "a photograph of an astronaut riding a horse" (8 tokens each).
std::string repeated(int n) {
    std::string s;
    for (int i = 0; i < n; ++i)
        s += (i ? " " : "") + std::string("a photograph of an astronaut riding a horse");
    return s;
}

TEST(TokenWindows, LongPromptMakesSeveralWindows) {
    const Ids unit{320, 8853, 539, 550, 18376, 6765, 320, 4558};
    Ids all;
    for (int i = 0; i < 10; ++i) all.insert(all.end(), unit.begin(), unit.end());  // 80 tokens
    for (int pad : {kPadSd1, kPadSd2}) {
        const TokenWindows w = tokenize_weighted(clip(), repeated(10), pad);
        ASSERT_EQ(w.n_windows, 2);
        ASSERT_EQ(w.tokens.size(), 154u);
        ASSERT_EQ(w.weights.size(), 154u);
        const Ids first(w.tokens.begin(), w.tokens.begin() + 77);
        const Ids second(w.tokens.begin() + 77, w.tokens.end());
        EXPECT_EQ(first, window(Ids(all.begin(), all.begin() + 75), pad));
        EXPECT_EQ(second, window(Ids(all.begin() + 75, all.end()), pad));
    }
    // Truncated to one window when several are not allowed: BOS + 75 + EOS.
    const TokenWindows t = tokenize_weighted(clip(), repeated(10), kPadSd1, false);
    EXPECT_EQ(t.n_windows, 1);
    EXPECT_EQ(t.tokens, window(Ids(all.begin(), all.begin() + 75), kPadSd1));
}

TEST(TokenWindows, WindowBoundaries) {
    const Ids body(75, 320);
    std::vector<int> tokens(75, 320);
    std::vector<float> weights(75, 1.2f);
    TokenWindows w = make_token_windows(tokens, weights, kBos, kEos, kPadSd1);
    EXPECT_EQ(w.n_windows, 1);
    EXPECT_EQ(w.tokens, window(body, kPadSd1));
    EXPECT_EQ(w.weights[75], 1.2f);
    EXPECT_EQ(w.weights[76], 1.0f);
    tokens.push_back(539);
    weights.push_back(0.5f);
    w = make_token_windows(tokens, weights, kBos, kEos, kPadSd2);
    EXPECT_EQ(w.n_windows, 2);
    EXPECT_EQ(Ids(w.tokens.begin() + 77, w.tokens.end()), window({539}, kPadSd2));
    EXPECT_EQ(w.weights[77], 1.0f);
    EXPECT_EQ(w.weights[78], 0.5f);
    tokens.resize(150, 320);
    weights.resize(150, 1.0f);
    w = make_token_windows(tokens, weights, kBos, kEos, kPadSd1);
    EXPECT_EQ(w.n_windows, 2);
    EXPECT_EQ(w.tokens[153], kEos);
}

TEST(TokenWindows, BreakStartsANewWindow) {
    // BREAK fills the chunk with EOS (also for SD2, where the final padding is 0).
    for (int pad : {kPadSd1, kPadSd2}) {
        const TokenWindows w = tokenize_weighted(clip(), "a red cube BREAK a horse", pad);
        ASSERT_EQ(w.n_windows, 2);
        Ids first_body{320, 736, 11353};
        first_body.resize(75, kEos);
        EXPECT_EQ(Ids(w.tokens.begin(), w.tokens.begin() + 77), window(first_body, pad));
        EXPECT_EQ(Ids(w.tokens.begin() + 77, w.tokens.end()), window({320, 4558}, pad));
        EXPECT_EQ(w.weights, std::vector<float>(154, 1.0f));
    }
    // A BREAK at a chunk boundary adds nothing.
    EXPECT_EQ(tokenize_weighted(clip(), "BREAK a horse", kPadSd1).tokens,
              window({320, 4558}, kPadSd1));
    EXPECT_EQ(tokenize_weighted(clip(), "a horse BREAK", kPadSd1).n_windows, 1);
    EXPECT_EQ(tokenize_weighted(clip(), "a BREAK BREAK b", kPadSd1).n_windows, 2);
    // Weighted text around a BREAK keeps its weights.
    const TokenWindows w = tokenize_weighted(clip(), "(a BREAK horse:1.2)", kPadSd1);
    ASSERT_EQ(w.n_windows, 2);
    EXPECT_EQ(w.weights[1], 1.2f);
    EXPECT_EQ(w.weights[2], 1.0f);
    EXPECT_EQ(w.tokens[78], 4558);
    EXPECT_EQ(w.weights[78], 1.2f);
}

}  // namespace
}  // namespace ggdiff
