#include "models/te/gemma_vocab.h"

#include <cstring>
#include <filesystem>

#include "io/mapped_file.h"
#include "models/te/gguf_vocab.h"

namespace ggdiff::models {

namespace {

bool is_gguf(const std::string& path) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) return false;
    auto file = MappedFile::open(path);
    return file.ok() && (*file)->size() >= 4 && std::memcmp((*file)->data(), "GGUF", 4) == 0;
}

}  // namespace

Result<GemmaTokenizer> read_gemma_gguf_vocab(const std::string& path, GemmaVersion version) {
    auto arrays = read_gguf_vocab_arrays(path, "llama", "the SentencePiece model Gemma uses");
    if (!arrays.ok()) return arrays.status();
    const std::vector<std::string>& tokens = arrays->strings["tokenizer.ggml.tokens"];
    auto scores = arrays->floats.find("tokenizer.ggml.scores");
    if (scores == arrays->floats.end()) {
        return Status::Error(path + ": the GGUF's vocabulary has no tokenizer.ggml.scores");
    }
    static const std::vector<int64_t> kNoTypes;
    auto types = arrays->ints.find("tokenizer.ggml.token_type");
    return GemmaTokenizer::from_sentencepiece(
        tokens, scores->second, types == arrays->ints.end() ? kNoTypes : types->second,
        path + " (tokenizer.ggml.*)", version);
}

Result<GemmaTokenizer> load_gemma_tokenizer(const std::vector<std::string>& model_paths,
                                            const std::string& flag, const std::string& llm,
                                            std::string* source, GemmaVersion version) {
    if (!flag.empty() && is_gguf(flag)) {
        auto tok = read_gemma_gguf_vocab(flag, version);
        if (!tok.ok()) return tok.status().with_context("--llm-tokenizer");
        *source = "the vocabulary in " + flag;
        return tok;
    }
    auto path = find_gemma_tokenizer(model_paths, flag, version);
    if (path.ok()) {
        *source = *path;
        return GemmaTokenizer::from_path(*path, version);
    }
    if (!flag.empty() || llm.empty()) return path.status();
    auto tok = read_gemma_gguf_vocab(llm, version);
    if (tok.ok()) {
        *source = "the vocabulary in " + llm;
        return tok;
    }
    return Status::Error(path.status().message() +
                         "; nor in the --llm file: " + tok.status().message());
}

Result<GemmaTokenizer> load_gemma3_tokenizer(const std::vector<std::string>& model_paths,
                                             const std::string& flag, const std::string& llm,
                                             std::string* source) {
    return load_gemma_tokenizer(model_paths, flag, llm, source, GemmaVersion::kGemma3);
}

}  // namespace ggdiff::models
