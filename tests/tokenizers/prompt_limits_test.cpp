// Prompt limits, and the heap BPE against CLIP's merge-all-occurrences loop.
#include <chrono>
#include <climits>
#include <fstream>
#include <random>
#include <sstream>
#include <unordered_map>

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

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// CLIP's reference tokenizer loop (simple_tokenizer.py), written from its description: GPT-2's
// byte-to-unicode table, then rounds of "merge every occurrence of the lowest-ranked pair".
class ReferenceBpe {
  public:
    ReferenceBpe() {
        std::ifstream in(test::clip_merges_path());
        std::string line;
        std::getline(in, line);  // version header
        for (int rank = 0; rank < ClipTokenizer::kNumMerges && std::getline(in, line); ++rank) {
            ranks_.emplace(line, rank);
        }
        std::vector<int> bs;
        for (int b = '!'; b <= '~'; ++b) bs.push_back(b);
        for (int b = 0xA1; b <= 0xAC; ++b) bs.push_back(b);
        for (int b = 0xAE; b <= 0xFF; ++b) bs.push_back(b);
        std::vector<int> cs = bs;
        int extra = 0;
        for (int b = 0; b < 256; ++b) {
            if (std::find(bs.begin(), bs.end(), b) == bs.end()) {
                bs.push_back(b);
                cs.push_back(256 + extra++);
            }
        }
        for (size_t i = 0; i < bs.size(); ++i) byte_[bs[i]] = utf8(cs[i]);
    }

    std::vector<int> encode(const ClipTokenizer& tok, const std::string& text) const {
        std::vector<int> ids;
        for (const std::string& piece :
             ClipTokenizer::pre_tokenize(ClipTokenizer::normalize(text))) {
            if (piece == "<|startoftext|>" || piece == "<|endoftext|>") {
                ids.push_back(piece[2] == 's' ? tok.bos() : tok.eos());
                continue;
            }
            for (const std::string& sym : bpe(piece)) ids.push_back(tok.token_to_id(sym));
        }
        return ids;
    }

  private:
    static std::string utf8(int cp) {
        std::string s;
        if (cp < 0x80) {
            s += static_cast<char>(cp);
        } else {
            s += static_cast<char>(0xC0 | (cp >> 6));
            s += static_cast<char>(0x80 | (cp & 0x3F));
        }
        return s;
    }
    std::vector<std::string> bpe(const std::string& piece) const {
        std::vector<std::string> word;
        for (unsigned char b : piece) word.push_back(byte_[b]);
        word.back() += "</w>";
        while (word.size() > 1) {
            int best_rank = INT_MAX;
            size_t best = 0;
            for (size_t i = 0; i + 1 < word.size(); ++i) {
                auto it = ranks_.find(word[i] + " " + word[i + 1]);
                if (it != ranks_.end() && it->second < best_rank) best_rank = it->second, best = i;
            }
            if (best_rank == INT_MAX) break;
            const std::string a = word[best], b = word[best + 1];
            std::vector<std::string> merged;
            for (size_t i = 0; i < word.size();) {
                if (i + 1 < word.size() && word[i] == a && word[i + 1] == b) {
                    merged.push_back(a + b), i += 2;
                } else {
                    merged.push_back(word[i]), i += 1;
                }
            }
            word = std::move(merged);
        }
        return word;
    }
    std::unordered_map<std::string, int> ranks_;
    std::string byte_[256];
};

TEST(ClipBpe, HeapMergesMatchTheReferenceLoop) {
    const ClipTokenizer& tok = test::clip();
    const ReferenceBpe ref;
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
    const auto t0 = std::chrono::steady_clock::now();
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
        const auto t0 = std::chrono::steady_clock::now();
        (void)check_clip_prompt(tok, p, "the prompt");
        EXPECT_LT(seconds_since(t0), 1.0 * kSlowdown) << p.substr(0, 20);
    }
}

}  // namespace
}  // namespace ggdiff
