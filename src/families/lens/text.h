// Lens's text conditioning: GPT-OSS-20B (models/te/gpt_oss.h) over OpenAI's harmony chat
// format, as stable-diffusion.cpp (38a51f81) builds it: a system message (ChatGPT, knowledge
// cutoff 2024-06, current date 2026-05-26, reasoning medium, the valid channels), a developer
// message asking to describe the image, the prompt as the user message, then an analysis turn
// ("Need to generate one image according to the description.") and the opening of the final
// turn. The tokens are cut at 512 (no padding); the prompt's A1111 emphasis weights its
// tokens' states (mean restored); the states after layers 6, 12, 18 and 24 (1-based, no final
// norm) are stacked per token and the first 97 tokens (the system and developer messages with
// o200k's tokenizer) are dropped.
#pragma once

#include <memory>
#include <string>

#include "models/te/gpt_oss.h"
#include "pipeline/family.h"
#include "runtime/module_runner.h"
#include "tokenizers/llm_tokenizer.h"

namespace ggdiff {

struct LensTemplate {
    std::string prefix, suffix;
    int drop_tokens = 97;
    int max_tokens = 512;
    std::vector<int> out_layers = {5, 11, 17, 23};  // 0-based
};
const LensTemplate& lens_template();

class LensTextEncoder : public TextConditioner {
  public:
    // Refuses an LLM without layer 24 before any weight is read; loads the layers it runs.
    static Result<std::unique_ptr<LensTextEncoder>> create(
        const FamilyContext& ctx, const ModuleDevices& where, const models::GptOssConfig& cfg,
        std::shared_ptr<const LlmTokenizer> tokenizer);

    // Token ids and emphasis weights of the templated prompt (cut at max_tokens).
    void tokenize(const std::string& prompt, std::vector<int>* ids,
                  std::vector<float>* weights) const;
    Result<Conditioning> encode(const TextRequest& request) override;
    void end_phase() override { runner_->end_phase(); }

  private:
    const TensorIndex* index_ = nullptr;
    models::GptOssConfig cfg_;
    std::shared_ptr<const LlmTokenizer> tokenizer_;
    std::unique_ptr<ModuleRunner> runner_;
};

}  // namespace ggdiff
