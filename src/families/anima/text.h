// Anima's text conditioning, as the reference engine (stable-diffusion.cpp) does it: the prompt
// split at its A1111 emphasis into runs; each run tokenized on its own by Qwen2's BPE (all with
// weight 1; an empty prompt is one <|endoftext|>) for the Qwen3 text encoder, whose final normed
// hidden states (causal, no chat template) the LLM adapter reads; and by T5's Unigram
// tokenizer (with the run's weight; then EOS) for the adapter's own token embedding. The
// adapter (in the DiT file, "llm_adapter.*") runs here, once per prompt, rather than at every
// step: its output does not depend on the latent or the timestep. Each of its tokens is scaled
// by the T5 token's weight and the sequence is zero-padded (or cut) to 512 tokens: the
// context the DiT's cross attention reads ([1024, 512, 1]).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "families/anima/dit.h"
#include "models/te/qwen_llm.h"
#include "pipeline/family.h"
#include "runtime/module_runner.h"
#include "tokenizers/llm_tokenizer.h"
#include "tokenizers/unigram_tokenizer.h"

namespace ggdiff {

// T5 token ids of one emphasis run as the reference engine's tokenizer gives them: runs of
// spaces count as one (its normalizer); the Metaspace pre-tokenizer sees the run as a whole, so
// a leading space is a "▁" of its own and an empty run is "▁"; no EOS.
std::vector<int> anima_t5_ids(const UnigramTokenizer& t5, const std::string& text);

class AnimaConditioner : public TextConditioner {
  public:
    // The Qwen3 encoder on `te`, the adapter on `adapter` (the DiT's device).
    static Result<std::unique_ptr<AnimaConditioner>> create(
        const FamilyContext& ctx, const ModuleDevices& te, const ModuleDevices& adapter,
        const models::QwenLlmConfig& llm, const models::AnimaConfig& dit,
        std::shared_ptr<const LlmTokenizer> qwen, std::shared_ptr<const UnigramTokenizer> t5);

    Result<Conditioning> encode(const TextRequest& request) override;
    void end_phase() override;

    ModuleRunner& llm_runner() { return *llm_runner_; }
    ModuleRunner& adapter_runner() { return *adapter_runner_; }

    // The token ids and T5 weights of a prompt (tests).
    struct Tokens {
        std::vector<int> qwen, t5;
        std::vector<float> t5_weights;
    };
    Tokens tokenize(const std::string& prompt) const;

  private:
    const TensorIndex* index_ = nullptr;
    models::QwenLlmConfig llm_;
    models::AnimaConfig dit_;
    std::shared_ptr<const LlmTokenizer> qwen_;
    std::shared_ptr<const UnigramTokenizer> t5_;
    std::unique_ptr<ModuleRunner> llm_runner_, adapter_runner_;
};

}  // namespace ggdiff
