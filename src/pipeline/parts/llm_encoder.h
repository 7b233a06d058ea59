// A Qwen-family language model as a family's text conditioning: its tokenizer (Qwen2's; any
// LlmTokenizer, e.g. Mistral's for FLUX.2 dev's llama-type LLM), a chat template around the
// prompt, the LLM on its placement, and the hidden states the diffusion model reads. Qwen Image
// drops the template's 34 leading tokens and takes the final normed states; Z-Image keeps every
// token and takes an earlier layer: both are a ChatTemplate.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "models/te/qwen_llm.h"
#include "pipeline/family.h"
#include "runtime/module_runner.h"
#include "tokenizers/qwen2_tokenizer.h"

namespace ggdiff {

// The tokenizer for the LLM: --llm-tokenizer, else beside the --llm file or the main model
// (see tokenizers/find_tokenizer.h). Reads no weights.
Result<std::shared_ptr<const Qwen2Tokenizer>> load_llm_tokenizer(const FamilyContext& ctx);

struct ChatTemplate {
    std::string prefix;  // before the prompt ("<|im_start|>system\n...<|im_start|>user\n")
    std::string suffix;  // after it ("<|im_end|>\n<|im_start|>assistant\n")
    // Put before the prompt's own text, in its part (Ovis-Image: a space after the colon that
    // ends the prefix), so emphasis parsing sees it as the prompt's.
    std::string prompt_lead;
    int drop_tokens = 0;  // leading tokens removed from the hidden states
    // Empty: the final normed states; else these layers' outputs (0-based) concatenated on
    // the feature axis.
    std::vector<int> out_layers;
    // Shorter sequences are right-padded with <|endoftext|> to this many tokens, the padding
    // hidden from every query as a key (FLUX.2 klein: 512); 0: no padding.
    int pad_tokens = 0;
    // Shorter states are followed by zero rows up to this many (FLUX.2 dev: 512); 0: none.
    int pad_states = 0;
    // Quoted spans of the prompt are tokenized one character at a time (LongCat: text to draw,
    // see spell_quoted_spans).
    bool spell_quotes = false;
    // The prompt is tokenized as it is, without A1111 emphasis parsing (Ideogram 4's JSON
    // prompts, whose brackets are text).
    bool plain_prompt = false;

    // The last layer the template reads (-1: all of them, for the final norm).
    int last_layer() const;
    // Feature width of the states for an LLM `hidden` wide.
    int64_t width(int64_t hidden) const;
};

// Rows that replace token embeddings before the LLM runs: rows [hidden, n] over the tokens
// position .. position + n - 1 (Qwen Image Edit's vision tower output).
struct EmbeddingSplice {
    int64_t position = 0;
    const HostTensor* rows = nullptr;
};

class LlmTextEncoder {
  public:
    // `tmpl`: the template it will be asked for (only the layers up to its last_layer() are
    // loaded); an LLM without that layer is refused before any weight is read.
    static Result<std::unique_ptr<LlmTextEncoder>> create(
        const FamilyContext& ctx, const ModuleDevices& where, const models::QwenLlmConfig& cfg,
        std::shared_ptr<const LlmTokenizer> tokenizer, const char* label, const ChatTemplate& tmpl);

    // Hidden states [tmpl.width(hidden), tokens, 1] of template(prompt), padded as the
    // template says: the prompt's A1111 emphasis weights scale its tokens' states (mean
    // restored over the whole sequence), then the template's leading tokens are dropped.
    // `splices` replace token embeddings of the templated prompt (an error if one reaches
    // past the end of the sequence or has the wrong width).
    Result<HostTensor> encode(const std::string& prompt, const ChatTemplate& tmpl,
                              const std::vector<EmbeddingSplice>& splices = {});

    const models::QwenLlmConfig& config() const { return cfg_; }
    void end_phase() { runner_->end_phase(); }

  private:
    const TensorIndex* index_ = nullptr;
    models::QwenLlmConfig cfg_;
    std::shared_ptr<const LlmTokenizer> tokenizer_;
    std::unique_ptr<ModuleRunner> runner_;
};

class LlmConditioner : public TextConditioner {
  public:
    LlmConditioner(std::unique_ptr<LlmTextEncoder> encoder, ChatTemplate tmpl)
        : encoder_(std::move(encoder)), template_(std::move(tmpl)) {}
    Result<Conditioning> encode(const TextRequest& request) override;
    void end_phase() override { encoder_->end_phase(); }

  private:
    std::unique_ptr<LlmTextEncoder> encoder_;
    ChatTemplate template_;
};

}  // namespace ggdiff
