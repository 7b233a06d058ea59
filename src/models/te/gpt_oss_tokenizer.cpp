#include "models/te/gpt_oss_tokenizer.h"

#include "models/te/gguf_vocab.h"

namespace ggdiff::models {

Result<GgufVocab> read_gguf_vocab(const std::string& path) {
    auto arrays = read_gguf_vocab_arrays(path, "gpt2", "the byte-level BPE GPT-OSS uses");
    if (!arrays.ok()) return arrays.status();
    const std::vector<std::string>& tokens = arrays->strings["tokenizer.ggml.tokens"];
    auto merges = arrays->strings.find("tokenizer.ggml.merges");
    if (merges == arrays->strings.end()) {
        return Status::Error(path + ": the GGUF's vocabulary has no tokenizer.ggml.merges");
    }
    static const std::vector<int64_t> kNoTypes;
    auto types = arrays->ints.find("tokenizer.ggml.token_type");
    auto tok = Qwen2Tokenizer::from_token_list(
        tokens, merges->second, types == arrays->ints.end() ? kNoTypes : types->second,
        path + " (tokenizer.ggml.*)");
    if (!tok.ok()) return tok.status();
    GgufVocab v{std::move(*tok), "", tokens.size(), merges->second.size()};
    auto pre = arrays->values.find("tokenizer.ggml.pre");
    if (pre != arrays->values.end()) v.pre = pre->second;
    return v;
}

}  // namespace ggdiff::models
