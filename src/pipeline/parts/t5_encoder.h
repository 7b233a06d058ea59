// A T5 encoder as a family part: the Unigram tokenizer (with A1111 emphasis), the chunk
// layout (FLUX: 255 tokens + EOS, padded to 256; SD3: 76 + EOS, padded to 77) and the T5
// stack on its placement. FLUX and SD3 use its hidden states as the denoiser's context.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "models/te/t5.h"
#include "pipeline/family.h"
#include "runtime/module_runner.h"
#include "tokenizers/unigram_tokenizer.h"

namespace ggdiff {

// The T5 tokenizer for a model: --t5xxl-tokenizer, or a tokenizer.json found next to the T5
// weights or the main model (see tokenizers/find_tokenizer.h).
Result<std::shared_ptr<const UnigramTokenizer>> load_t5_tokenizer(const FamilyContext& ctx);

class T5TextEncoder {
  public:
    static constexpr int kChunkTokens = 256;

    // `chunk_tokens`: the length of one chunk the encoder runs on (tokens + EOS + padding).
    static Result<std::unique_ptr<T5TextEncoder>> create(
        const FamilyContext& ctx, const ModuleDevices& where, const models::T5Config& cfg,
        std::shared_ptr<const UnigramTokenizer> tokenizer, int chunk_tokens = kChunkTokens);

    // Hidden states [width, chunk_tokens * chunks, 1], each token scaled by its prompt weight
    // and each chunk's mean restored.
    Result<HostTensor> encode(const std::string& prompt);
    // The same with which positions are real (prompt tokens and each chunk's EOS: 1) or
    // padding (0); `mask_padding` also hides the padding from T5's own self-attention
    // (Chroma's --chroma-enable-t5-mask).
    struct Masked {
        HostTensor hidden;
        std::vector<uint8_t> real;
    };
    Result<Masked> encode_masked(const std::string& prompt, bool mask_padding);
    // Hidden states [width, chunk_tokens, 1] of one sequence of chunk_tokens ids as given (no
    // EOS, no emphasis); with `real`, the positions it marks 0 are hidden from T5's own
    // self-attention (MiniT2I's prompt mask).
    Result<HostTensor> encode_ids(const std::vector<int32_t>& ids,
                                  const std::vector<uint8_t>* real = nullptr);
    int chunk_tokens() const { return chunk_; }
    const UnigramTokenizer& tokenizer() const { return *tokenizer_; }

    const models::T5Config& config() const { return cfg_; }
    ModuleRunner& runner() { return *runner_; }
    void end_phase() { runner_->end_phase(); }

  private:
    models::T5Config cfg_;
    std::shared_ptr<const UnigramTokenizer> tokenizer_;
    int chunk_ = kChunkTokens;
    std::vector<int32_t> buckets_;
    std::unique_ptr<ModuleRunner> runner_;
};

}  // namespace ggdiff
