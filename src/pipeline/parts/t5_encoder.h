// A T5 encoder as a family part: the Unigram tokenizer (with A1111 emphasis), the chunk
// layout (255 tokens + EOS, padded to 256) and the T5 stack on its placement. FLUX and SD3
// use its hidden states as the denoiser's context.
#pragma once

#include <memory>
#include <string>

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

    static Result<std::unique_ptr<T5TextEncoder>> create(
        const FamilyContext& ctx, const ModuleDevices& where, const models::T5Config& cfg,
        std::shared_ptr<const UnigramTokenizer> tokenizer);

    // Hidden states [width, 256 * chunks, 1], each token scaled by its prompt weight and
    // each chunk's mean restored.
    Result<HostTensor> encode(const std::string& prompt);

    const models::T5Config& config() const { return cfg_; }
    ModuleRunner& runner() { return *runner_; }
    void end_phase() { runner_->end_phase(); }

  private:
    models::T5Config cfg_;
    std::shared_ptr<const UnigramTokenizer> tokenizer_;
    std::vector<int32_t> buckets_;
    std::unique_ptr<ModuleRunner> runner_;
};

}  // namespace ggdiff
