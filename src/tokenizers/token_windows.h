// Weighted prompt -> CLIP token windows, laid out as stable-diffusion.cpp does for SD1/SD2/SDXL.
//
// The prompt is split by parse_prompt_attention(); each run is encoded on its own and every
// token carries its run's weight. A BREAK fills the current 75-token chunk with EOS (weight 1;
// nothing when the chunk is empty). The tokens are then cut into chunks of 75, each window is
// BOS + chunk + EOS, and the last one is padded to 77 with `pad_token` (weight 1): EOS (49407)
// for SD1's CLIP ViT-L, 0 for SD2's OpenCLIP ViT-H. An empty prompt is one window
// BOS EOS pad... . The mean-restoring rescale by these weights is the text encoder's job.
#pragma once

#include <string>
#include <vector>

#include "tokenizers/clip_tokenizer.h"

namespace ggdiff {

constexpr int kClipWindowLength = 77;  // CLIP's positions: BOS + 75 tokens + EOS
constexpr int kClipChunkTokens = kClipWindowLength - 2;

struct TokenWindows {
    std::vector<int> tokens;     // n_windows * 77 token ids
    std::vector<float> weights;  // one per token; 1 for BOS, EOS and padding
    int n_windows = 0;
};

// With allow_multiple_windows = false a long prompt is truncated to one window whose last
// token is EOS (stable-diffusion.cpp without overflow expansion). `special` (textual
// inversion names) is split out of every weighted run before BPE; its ids carry the run's
// weight.
TokenWindows tokenize_weighted(const ClipTokenizer& tokenizer, const std::string& prompt,
                               int pad_token, bool allow_multiple_windows = true,
                               const ClipSpecialWords* special = nullptr);

// The weighted tokens of `prompt` before the window layout (no BOS/EOS; a BREAK already
// filled with EOS), as tokenize_weighted lays them out.
void weighted_prompt_tokens(const ClipTokenizer& tokenizer, const std::string& prompt,
                            std::vector<int>& tokens, std::vector<float>& weights,
                            const ClipSpecialWords* special = nullptr);

// The window layout alone, for already weighted tokens (no BOS/EOS in `tokens`).
TokenWindows make_token_windows(const std::vector<int>& tokens, const std::vector<float>& weights,
                                int bos, int eos, int pad_token,
                                bool allow_multiple_windows = true);

}  // namespace ggdiff
