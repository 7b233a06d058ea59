#include "models/te/gpt_oss_tokenizer.h"

#include <cstring>

#include "core/safe_text.h"
#include "io/checkpoint_file.h"
#include "io/mapped_file.h"

namespace ggdiff::models {

Result<GgufVocab> read_gguf_vocab(const std::string& path) {
    auto file = MappedFile::open(path);
    if (!file.ok()) return file.status();
    const MappedFile& f = **file;
    if (f.size() < 4 || std::memcmp(f.data(), "GGUF", 4) != 0) {
        return Status::Error(path + ": not a GGUF file (no tokenizer.ggml.* vocabulary)");
    }
    auto arrays = read_gguf_arrays(f.data(), f.size(), "tokenizer.ggml.");
    if (!arrays.ok()) return arrays.status().with_context(path);
    auto tokens = arrays->strings.find("tokenizer.ggml.tokens");
    if (tokens == arrays->strings.end()) {
        return Status::Error(path + ": the GGUF holds no tokenizer.ggml.tokens vocabulary");
    }
    auto model = arrays->values.find("tokenizer.ggml.model");
    const std::string kind = model == arrays->values.end() ? "" : model->second;
    if (kind != "gpt2") {
        return Status::Error(path + ": tokenizer.ggml.model is " + quote_name(kind) +
                             ", not 'gpt2' (the byte-level BPE GPT-OSS uses)");
    }
    auto merges = arrays->strings.find("tokenizer.ggml.merges");
    if (merges == arrays->strings.end()) {
        return Status::Error(path + ": the GGUF's vocabulary has no tokenizer.ggml.merges");
    }
    static const std::vector<int64_t> kNoTypes;
    auto types = arrays->ints.find("tokenizer.ggml.token_type");
    auto tok = Qwen2Tokenizer::from_token_list(
        tokens->second, merges->second, types == arrays->ints.end() ? kNoTypes : types->second,
        path + " (tokenizer.ggml.*)");
    if (!tok.ok()) return tok.status();
    GgufVocab v{std::move(*tok), "", tokens->second.size(), merges->second.size()};
    auto pre = arrays->values.find("tokenizer.ggml.pre");
    if (pre != arrays->values.end()) v.pre = pre->second;
    return v;
}

}  // namespace ggdiff::models
