// A1111 prompt emphasis syntax (modules/prompt_parser.py, parse_prompt_attention).
//
//   (abc)      weight x 1.1          [abc]    weight / 1.1
//   (abc:1.3)  weight x 1.3          \( \) \[ \] \\   literal characters
//   BREAK      (upper case, a separate word) ends the current 75-token chunk
//
// Nesting multiplies; unbalanced brackets are closed at the end of the prompt; runs of equal
// weight are merged. Weights are computed in float, in the same order as stable-diffusion.cpp.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace ggdiff {

// The text and weight of each run. A BREAK is the pair {"BREAK", -1.0f} (kBreakWeight); it is
// never merged with its neighbours nor scaled by brackets around it. An empty prompt gives
// {{"", 1.0f}}.
constexpr float kBreakWeight = -1.0f;
std::vector<std::pair<std::string, float>> parse_prompt_attention(const std::string& text);

// LongCat's quote spelling (stable-diffusion.cpp's spell_quotes): in each run, every quoted span
// ('...', "...", and the curly pairs U+2018/U+2019 and U+201C/U+201D) becomes one run per UTF-8
// character, quote marks included, each with the run's weight, so that text to be drawn is
// tokenized letter by letter. An ASCII apostrophe between two ASCII letters is no quote mark
// ("don't"); a quote without its closing mark is left as text; for the curly pairs, a second
// opening mark before the closing one leaves the first as text. Other text stays as it is.
std::vector<std::pair<std::string, float>> spell_quoted_spans(
    const std::vector<std::pair<std::string, float>>& runs);

// True for the marker parse_prompt_attention() emits for BREAK.
inline bool is_break_marker(const std::pair<std::string, float>& item) {
    return item.second == kBreakWeight && item.first == "BREAK";
}

}  // namespace ggdiff
