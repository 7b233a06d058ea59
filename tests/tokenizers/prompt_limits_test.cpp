// Prompt limits, and the heap BPE against CLIP's merge-all-occurrences loop.
#include <time.h>

#include <chrono>
#include <climits>
#include <fstream>
#include <random>
#include <sstream>
#include <unordered_map>

#include "reference_bpe.h"
#include "test_util.h"
#include "tokenizers/prompt_attention.h"
#include "tokenizers/prompt_limits.h"
#include "tokenizers/token_windows.h"

namespace ggdiff {
namespace {

#ifdef GGDIFF_SANITIZE
constexpr double kSlowdown = 10;
#else
constexpr double kSlowdown = 1;
#endif

// CPU time of this process: what the work costs, whatever else the machine is doing.
double cpu_now() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double seconds_since(double t0) {
    return cpu_now() - t0;
}

TEST(ClipBpe, HeapMergesMatchTheReferenceLoop) {
    const ClipTokenizer& tok = test::clip();
    const test::ReferenceBpe ref(test::clip_merges_path());
    std::mt19937 rng(5);
    const std::vector<std::string> alphabet = {"a",  "e",  "i",   "o", "n",  "t", "s", "r", "l",
                                               "aa", "th", "ing", "é", "日", " ", "'", "!", "1"};
    for (int iter = 0; iter < 3000; ++iter) {
        std::string text;
        const size_t len = 1 + rng() % 40;
        for (size_t i = 0; i < len; ++i) text += alphabet[rng() % alphabet.size()];
        ASSERT_EQ(tok.encode(text), ref.encode(tok, text)) << "text: [" << text << "]";
    }
    for (const std::string text :
         {"a photograph of an astronaut riding a horse", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
          "supercalifragilisticexpialidocious antidisestablishmentarianism", "banananananananana",
          "lowerlowerlowest newer wider"}) {
        EXPECT_EQ(tok.encode(text), ref.encode(tok, text)) << text;
    }
}

TEST(ClipBpe, LongWordsTokenizeQuickly) {
    const ClipTokenizer& tok = test::clip();
    std::mt19937 rng(3);
    std::string word;
    for (size_t i = 0; i < kMaxPromptBytes; ++i) word += static_cast<char>('a' + rng() % 26);
    const double t0 = cpu_now();
    const std::vector<int> ids = tok.encode(word);
    EXPECT_LT(seconds_since(t0), 0.5 * kSlowdown);
    EXPECT_GT(ids.size(), 1000u);
}

TEST(PromptLimits, BytesAndWindows) {
    EXPECT_TRUE(check_prompt_bytes(kMaxPromptBytes, "the prompt").ok());
    const Status st = check_prompt_bytes(1u << 20, "the prompt");
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.message(), "the prompt is too long: 1048576 bytes (the limit is 16384 bytes)");

    const ClipTokenizer& tok = test::clip();
    EXPECT_TRUE(check_clip_prompt(tok, "a cat", "the prompt").ok());
    EXPECT_TRUE(check_clip_prompt(tok, "", "the prompt").ok());
    std::string breaks;
    for (int i = 0; i < kMaxPromptWindows; ++i) breaks += "cat BREAK ";
    EXPECT_TRUE(check_clip_prompt(tok, breaks, "the prompt").ok());
    breaks += "cat BREAK cat";
    const Status many = check_clip_prompt(tok, breaks, "the negative prompt");
    ASSERT_FALSE(many.ok());
    EXPECT_NE(many.message().find("the negative prompt is too long: 34 tokens in 34 windows"),
              std::string::npos)
        << many.message();
}

// Every prompt under the byte limit is checked (parsed and tokenized) in milliseconds, whatever
// its shape: the limit's fast path.
TEST(PromptLimits, WorstCasePromptsAtTheLimitAreCheckedQuickly) {
    const ClipTokenizer& tok = test::clip();
    const size_t n = kMaxPromptBytes;
    std::vector<std::string> prompts = {std::string(n, 'a'), std::string(n, '('),
                                        std::string(n, ')'), std::string(n, '\\'),
                                        std::string(n, ':')};
    std::string s;
    while (s.size() + 2 <= n) s += "(a";
    prompts.push_back(s);
    s.clear();
    while (s.size() + 8 <= n) s += "(a:1.1)";
    prompts.push_back(s);
    s.clear();
    while (s.size() + 6 <= n) s += "BREAK ";
    prompts.push_back(s);
    s.clear();
    while (s.size() + 4 <= n) s += "日本";
    prompts.push_back(s);
    for (const std::string& p : prompts) {
        const double t0 = cpu_now();
        (void)check_clip_prompt(tok, p, "the prompt");
        EXPECT_LT(seconds_since(t0), 1.0 * kSlowdown) << p.substr(0, 20);
    }
}

}  // namespace
}  // namespace ggdiff
