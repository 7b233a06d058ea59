// PiD's text conditioning, as stable-diffusion.cpp (38a51f81) runs it: Gemma 2 2B's final
// normed hidden states of " " + prompt after <bos>, right-padded with <pad> (hidden from every
// query as a key) or cut to N + 298 tokens, N being the token count (with <bos>) of PixelDiT's
// "Enhanced prompt" instruction text, which itself is only counted, never encoded. Of the states
// the first (<bos>) and the last 299 are kept (300, the DiT's text length), so a prompt shorter
// than the instruction reaches the DiT only through the padding tokens that attend to it.
// A1111 emphasis weights scale the prompt tokens' states (the mean restored).
#pragma once

#include <memory>

#include "models/te/gemma.h"
#include "pipeline/family.h"
#include "runtime/module_runner.h"
#include "tokenizers/gemma_tokenizer.h"

namespace ggdiff {

class PidText : public TextConditioner {
  public:
    static Result<std::unique_ptr<PidText>> create(const FamilyContext& ctx,
                                                   const ModuleDevices& where,
                                                   const models::GemmaConfig& cfg,
                                                   std::shared_ptr<const GemmaTokenizer> tok,
                                                   int64_t text_max);
    Result<Conditioning> encode(const TextRequest& request) override;
    void end_phase() override { runner_->end_phase(); }
    ModuleRunner& runner() { return *runner_; }
    // The padded sequence length the LLM runs on (N + text_max - 2).
    int64_t sequence_length() const { return length_; }

  private:
    const TensorIndex* index_ = nullptr;
    models::GemmaConfig cfg_;
    std::shared_ptr<const GemmaTokenizer> tok_;
    std::unique_ptr<ModuleRunner> runner_;
    int64_t text_max_ = 300;
    int64_t length_ = 0;
};

// PixelDiT's prompt-enhancer instruction (stable-diffusion.cpp's chi_prompt).
extern const char* const kPidInstruction;

}  // namespace ggdiff
