// CLIP's tokenizer loop as simple_tokenizer.py writes it (rounds of "merge every occurrence of
// the lowest-ranked pair"), the slow and obvious reference that ClipTokenizer's heap BPE is
// compared against (tests/tokenizers and the prompt fuzz target).
#pragma once

#include <algorithm>
#include <climits>
#include <fstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "tokenizers/clip_tokenizer.h"

namespace ggdiff::test {

// GPT-2's byte-to-unicode table, then the merge rounds; ids through the tokenizer's vocabulary.
class ReferenceBpe {
  public:
    explicit ReferenceBpe(const std::string& merges_path) {
        std::ifstream in(merges_path);
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

}  // namespace ggdiff::test
