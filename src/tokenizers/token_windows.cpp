#include "tokenizers/token_windows.h"

#include <algorithm>

#include "core/log.h"
#include "tokenizers/prompt_attention.h"

namespace ggdiff {

TokenWindows make_token_windows(const std::vector<int>& tokens, const std::vector<float>& weights,
                                int bos, int eos, int pad_token, bool allow_multiple_windows) {
    TokenWindows out;
    const size_t chunk = kClipChunkTokens;
    size_t n_chunks = std::max<size_t>(1, (tokens.size() + chunk - 1) / chunk);
    if (!allow_multiple_windows && n_chunks > 1) {
        GGDIFF_LOG_WARN("prompt of %zu tokens truncated to %d", tokens.size(), kClipChunkTokens);
        n_chunks = 1;
    }
    out.n_windows = static_cast<int>(n_chunks);
    out.tokens.reserve(n_chunks * kClipWindowLength);
    out.weights.reserve(n_chunks * kClipWindowLength);
    for (size_t c = 0; c < n_chunks; ++c) {
        const size_t begin = c * chunk;
        const size_t end = std::min(tokens.size(), begin + chunk);
        out.tokens.push_back(bos);
        out.weights.push_back(1.0f);
        for (size_t i = begin; i < end; ++i) {
            out.tokens.push_back(tokens[i]);
            out.weights.push_back(i < weights.size() ? weights[i] : 1.0f);
        }
        out.tokens.push_back(eos);
        out.weights.push_back(1.0f);
        const size_t window_end = (c + 1) * kClipWindowLength;
        while (out.tokens.size() < window_end) {
            out.tokens.push_back(pad_token);
            out.weights.push_back(1.0f);
        }
    }
    return out;
}

void weighted_prompt_tokens(const ClipTokenizer& tokenizer, const std::string& prompt,
                            std::vector<int>& tokens, std::vector<float>& weights,
                            const ClipSpecialWords* special) {
    tokens.clear();
    weights.clear();
    for (const auto& item : parse_prompt_attention(prompt)) {
        if (is_break_marker(item)) {
            const size_t fill =
                (kClipChunkTokens - tokens.size() % kClipChunkTokens) % kClipChunkTokens;
            tokens.insert(tokens.end(), fill, tokenizer.eos());
            weights.insert(weights.end(), fill, 1.0f);
            continue;
        }
        const std::vector<int> ids = tokenizer.encode(item.first, special);
        tokens.insert(tokens.end(), ids.begin(), ids.end());
        weights.insert(weights.end(), ids.size(), item.second);
    }
}

TokenWindows tokenize_weighted(const ClipTokenizer& tokenizer, const std::string& prompt,
                               int pad_token, bool allow_multiple_windows,
                               const ClipSpecialWords* special) {
    std::vector<int> tokens;
    std::vector<float> weights;
    weighted_prompt_tokens(tokenizer, prompt, tokens, weights, special);
    return make_token_windows(tokens, weights, tokenizer.bos(), tokenizer.eos(), pad_token,
                              allow_multiple_windows);
}

}  // namespace ggdiff
