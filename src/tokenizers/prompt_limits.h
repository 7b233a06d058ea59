// How long a prompt may be. Text encoders run once per 75-token window, so an unbounded prompt
// is unbounded work: a 1 MB prompt meant minutes of encoding thousands of windows. Prompts are
// refused, with a message saying by how much they are over, when they pass either limit:
//  - kMaxPromptBytes of text: checked first, in O(1), wherever a prompt enters (the options
//    setter, --prompt-file before reading the file, the generate path);
//  - kMaxPromptWindows CLIP windows after tokenizing (BREAK starts a new window, so a short
//    text can still ask for many), checked before any window is encoded.
// Everything under the limits tokenizes in milliseconds (linear-time parsing, O(n log n) BPE).
#pragma once

#include <cstddef>
#include <string>

#include "core/status.h"

namespace ggdiff {

constexpr size_t kMaxPromptBytes = 16 * 1024;  // ~3500 tokens of English text
constexpr int kMaxPromptWindows = 32;          // 32 x 75 = 2400 tokens

// `what` names the prompt in the message ("prompt", "negative prompt", "--prompt-file x.txt").
Status check_prompt_bytes(size_t bytes, const std::string& what);
Status check_prompt_windows(int windows, size_t tokens, const std::string& what);

class ClipTokenizer;
// Both checks for a prompt that will be encoded in CLIP windows (weights and BREAKs as
// tokenize_weighted() lays them out).
Status check_clip_prompt(const ClipTokenizer& tokenizer, const std::string& prompt,
                         const std::string& what);

}  // namespace ggdiff
