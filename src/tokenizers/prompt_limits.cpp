#include "tokenizers/prompt_limits.h"

#include "core/log.h"
#include "tokenizers/token_windows.h"

namespace ggdiff {

Status check_prompt_bytes(size_t bytes, const std::string& what) {
    if (bytes <= kMaxPromptBytes) return Status::Ok();
    return Status::Error(string_format("%s is too long: %zu bytes (the limit is %zu bytes)",
                                       what.c_str(), bytes, kMaxPromptBytes));
}

Status check_prompt_windows(int windows, size_t tokens, const std::string& what) {
    if (windows <= kMaxPromptWindows) return Status::Ok();
    return Status::Error(string_format(
        "%s is too long: %zu tokens in %d windows of %d (the limit is %d windows, %d tokens; "
        "each BREAK starts a new window)",
        what.c_str(), tokens, windows, kClipChunkTokens, kMaxPromptWindows,
        kMaxPromptWindows * kClipChunkTokens));
}

Status check_clip_prompt(const ClipTokenizer& tokenizer, const std::string& prompt,
                         const std::string& what) {
    GGDIFF_TRY(check_prompt_bytes(prompt.size(), what));
    const TokenWindows tw = tokenize_weighted(tokenizer, prompt, tokenizer.eos());
    size_t tokens = 0;
    for (int t : tw.tokens) tokens += t != tokenizer.bos() && t != tokenizer.eos();
    return check_prompt_windows(tw.n_windows, tokens, what);
}

}  // namespace ggdiff
