// Pieces every byte-level BPE tokenizer here shares (Qwen2, Mistral's Tekken): GPT-2's table
// of stand-in characters for the 256 bytes, the whitespace alternatives their pre-tokenizer
// patterns end with, and the merge loop itself (ranked by merge list or by token rank).
#pragma once

#include <array>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace ggdiff::byte_level {

// GPT-2's bytes_to_unicode(): printable bytes stand for themselves, the others for 256 + n.
std::array<char32_t, 256> byte_code_points();

// The UTF-8 stand-in string of each byte (byte_code_points() encoded).
std::array<std::string, 256> byte_symbols();

// Length of the match of `\s*[\r\n]+|\s+(?!\S)|\s+` at s[i], or 0 when s[i] is not whitespace.
size_t match_whitespace(const std::u32string& s, size_t i);

// The rank of merging two adjacent symbols, or -1 when they do not merge.
using PairRank = std::function<int(const std::string& first, const std::string& second)>;

// Merges `symbols` (a piece's byte symbols) the BPE way: while some adjacent pair has a rank,
// every occurrence of the lowest-ranked pair is merged, left to right.
std::vector<std::string> merge(std::vector<std::string> symbols, const PairRank& rank);

// Tokenizes `text` whose special tokens (`specials`, longest first) are matched as they are
// wherever `may_start` allows one to begin; the runs between them go through `plain`.
std::vector<int> encode_with_specials(
    const std::string& text, const std::vector<std::pair<std::string, int>>& specials,
    const std::function<bool(unsigned char)>& may_start,
    const std::function<std::vector<int>(const std::string&)>& plain);

}  // namespace ggdiff::byte_level
