// A small synthetic Mistral (Tekken) vocabulary, written as Mistral's tekken.json and as the
// Hugging Face tokenizer.json converted from it, for tests: 24 control tokens (the 20 Tekken
// names at ids 0..19, <SPECIAL_20>..<SPECIAL_23> unlisted), the 256 bytes, then the merged
// tokens of kSyntheticMerges in rank order; the vocabulary is cut before the last one ("cd"),
// as config.default_vocab_size says. No real Mistral vocabulary ships here.
#pragma once

#include <array>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/base64.h"
#include "tokenizers/byte_level_bpe.h"

namespace ggdiff::test {

constexpr int kSyntheticSpecials = 24;

// Tekken's pre-tokenizer pattern as tekken.json and tokenizer.json spell it (the one the
// expected splits in the tests were made with, by Python's `regex` module).
constexpr const char* kTekkenPattern =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|)"
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|)"
    R"(\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

inline const char* const kTekkenSpecialNames[] = {
    "<unk>",
    "<s>",
    "</s>",
    "[INST]",
    "[/INST]",
    "[AVAILABLE_TOOLS]",
    "[/AVAILABLE_TOOLS]",
    "[TOOL_RESULTS]",
    "[/TOOL_RESULTS]",
    "[TOOL_CALLS]",
    "[IMG]",
    "<pad>",
    "[IMG_BREAK]",
    "[IMG_END]",
    "[PREFIX]",
    "[MIDDLE]",
    "[SUFFIX]",
    "[SYSTEM_PROMPT]",
    "[/SYSTEM_PROMPT]",
    "[TOOL_CONTENT]",
};

// Byte strings merged pairwise, in rank order (rank 256 + index).
inline const std::vector<std::pair<std::string, std::string>>& synthetic_merges() {
    static const std::vector<std::pair<std::string, std::string>> m = {
        {"H", "e"},   {"l", "l"}, {"ll", "o"},    {"He", "llo"}, {" ", "w"},    {"o", "r"},
        {" w", "or"}, {"l", "d"}, {" wor", "ld"}, {"a", "t"},    {" ", "c"},    {" c", "at"},
        {"i", "n"},   {"[", "I"}, {" ", "a"},     {"r", "e"},    {"e", "d"},    {" ", "r"},
        {" r", "ed"}, {"a", "p"}, {"p", "l"},     {"ap", "pl"},  {"appl", "e"}, {" ", "apple"},
        {"\n", "\n"}, {"c", "d"},
    };
    return m;
}

// Merged tokens inside the vocabulary (the last merge, "cd", is cut).
inline size_t synthetic_kept_merges() {
    return synthetic_merges().size() - 1;
}

// The id of a token of the synthetic vocabulary given as bytes (a byte or a kept merge).
inline int synthetic_id(const std::string& bytes) {
    if (bytes.size() == 1) return kSyntheticSpecials + static_cast<unsigned char>(bytes[0]);
    const auto& m = synthetic_merges();
    for (size_t i = 0; i < synthetic_kept_merges(); ++i) {
        if (m[i].first + m[i].second == bytes)
            return kSyntheticSpecials + 256 + static_cast<int>(i);
    }
    return -1;
}

inline std::string to_symbols(const std::string& bytes) {
    static const std::array<std::string, 256> sym = byte_level::byte_symbols();
    std::string out;
    for (unsigned char b : bytes) out += sym[b];
    return out;
}

inline void write_text(const std::filesystem::path& path, const std::string& text) {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream out(path, std::ios::binary);
    out << text;
}

// tekken.json's text.
inline std::string synthetic_tekken_json() {
    nlohmann::json vocab = nlohmann::json::array();
    auto add = [&](const std::string& bytes) {
        const int rank = static_cast<int>(vocab.size());
        vocab.push_back(
            {{"rank", rank},
             {"token_bytes",
              base64_encode(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size())},
             {"token_str", nullptr}});
    };
    for (int b = 0; b < 256; ++b) add(std::string(1, static_cast<char>(b)));
    for (const auto& [a, b] : synthetic_merges()) add(a + b);
    nlohmann::json specials = nlohmann::json::array();
    for (int i = 0; i < 20; ++i) {
        specials.push_back(
            {{"rank", i}, {"token_str", kTekkenSpecialNames[i]}, {"is_control", true}});
    }
    nlohmann::json j = {
        {"config",
         {{"pattern", kTekkenPattern},
          {"num_vocab_tokens", vocab.size()},
          {"default_vocab_size", kSyntheticSpecials + 256 + synthetic_kept_merges()},
          {"default_num_special_tokens", kSyntheticSpecials},
          {"version", "v7"}}},
        {"vocab", vocab},
        {"special_tokens", specials},
    };
    return j.dump();
}

// The Hugging Face tokenizer.json converted from it.
inline std::string synthetic_tokenizer_json() {
    nlohmann::json vocab = nlohmann::json::object();
    nlohmann::json added = nlohmann::json::array();
    for (int i = 0; i < kSyntheticSpecials; ++i) {
        const std::string name =
            i < 20 ? kTekkenSpecialNames[i] : "<SPECIAL_" + std::to_string(i) + ">";
        vocab[name] = i;
        added.push_back({{"id", i}, {"content", name}, {"special", true}});
    }
    for (int b = 0; b < 256; ++b) {
        vocab[to_symbols(std::string(1, static_cast<char>(b)))] = kSyntheticSpecials + b;
    }
    nlohmann::json merges = nlohmann::json::array();
    for (size_t i = 0; i < synthetic_kept_merges(); ++i) {
        const auto& [a, b] = synthetic_merges()[i];
        vocab[to_symbols(a + b)] = kSyntheticSpecials + 256 + static_cast<int>(i);
        merges.push_back(to_symbols(a) + " " + to_symbols(b));
    }
    nlohmann::json j = {
        {"version", "1.0"},
        {"added_tokens", added},
        {"pre_tokenizer",
         {{"type", "Sequence"},
          {"pretokenizers",
           {{{"type", "Split"},
             {"pattern", {{"Regex", kTekkenPattern}}},
             {"behavior", "Isolated"},
             {"invert", false}},
            {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}}},
        {"model",
         {{"type", "BPE"},
          {"ignore_merges", true},
          {"byte_fallback", false},
          {"vocab", vocab},
          {"merges", merges}}},
    };
    return j.dump();
}

}  // namespace ggdiff::test
