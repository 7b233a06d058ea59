#include "models/te/gguf_vocab.h"

#include <cstring>

#include "core/safe_text.h"
#include "io/mapped_file.h"

namespace ggdiff::models {

Result<GgufArrays> read_gguf_vocab_arrays(const std::string& path, const std::string& model,
                                          const std::string& kind) {
    auto file = MappedFile::open(path);
    if (!file.ok()) return file.status();
    const MappedFile& f = **file;
    if (f.size() < 4 || std::memcmp(f.data(), "GGUF", 4) != 0) {
        return Status::Error(path + ": not a GGUF file (no tokenizer.ggml.* vocabulary)");
    }
    auto arrays = read_gguf_arrays(f.data(), f.size(), "tokenizer.ggml.");
    if (!arrays.ok()) return arrays.status().with_context(path);
    if (!arrays->strings.count("tokenizer.ggml.tokens")) {
        return Status::Error(path + ": the GGUF holds no tokenizer.ggml.tokens vocabulary");
    }
    auto m = arrays->values.find("tokenizer.ggml.model");
    const std::string stored = m == arrays->values.end() ? "" : m->second;
    if (stored != model) {
        return Status::Error(path + ": tokenizer.ggml.model is " + quote_name(stored) + ", not " +
                             quote_name(model) + " (" + kind + ")");
    }
    return arrays;
}

}  // namespace ggdiff::models
