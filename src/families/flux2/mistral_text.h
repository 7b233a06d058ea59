// FLUX.2 dev's text conditioning, as the reference engine builds it: Mistral Small 3.1 / 3.2
// (models::detect_mistral_llm) reads
//   <s>[SYSTEM_PROMPT]You are an AI that reasons about image descriptions. ...[/SYSTEM_PROMPT]
//   [INST]{prompt}[/INST]
// (one BOS, no token padding; the prompt's A1111 emphasis weights its tokens' states), and
// the hidden states after layers 10, 20 and 30 (Hugging Face's hidden_states[10], [20], [30]:
// the outputs of 0-based layers 9, 19, 29, before any final norm) are concatenated on the
// feature axis, then zero rows are added up to 512 tokens: context [3 * hidden, max(T, 512), 1].
// Checked here on a synthetic tokenizer and a tiny random LLM only: no real Mistral vocabulary
// or weights ship with the tests.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "models/te/qwen_llm.h"
#include "pipeline/family.h"
#include "pipeline/parts/llm_encoder.h"
#include "tokenizers/mistral_tokenizer.h"

namespace ggdiff {

// The layers whose outputs FLUX.2 dev reads (0-based) and the rows its context is padded to.
inline const std::vector<int>& flux2_dev_text_layers() {
    static const std::vector<int> layers = {9, 19, 29};
    return layers;
}
constexpr int64_t kFlux2DevTextRows = 512;

// The chat template around the prompt, BOS included.
const std::string& flux2_dev_prompt_prefix();
const std::string& flux2_dev_prompt_suffix();

// The Mistral tokenizer, from the first of: --llm-tokenizer (tekken.json, tokenizer.json or a
// folder holding one); the tekken.json ComfyUI's single-file text encoders carry as the U8
// tensor "<llm_prefix>tekken_model"; a tekken.json / tokenizer.json beside the --llm file or
// the main model (see find_mistral_tokenizer). Reads no weights.
Result<std::shared_ptr<const MistralTokenizer>> load_mistral_tokenizer(
    const FamilyContext& ctx, const std::string& llm_prefix);

// The template for LlmTextEncoder: the prefix and suffix above, the three layers, no token
// padding but the states zero-padded to 512 rows (LlmTextEncoder tokenizes the template's
// parts and each emphasis run on their own, as the reference does).
ChatTemplate flux2_dev_template();

// FLUX.2 dev's text conditioner for the LLM `llm` (detect_mistral_llm under --llm's prefix),
// on ctx.placement.te, with its tokenizer (load_mistral_tokenizer). Fails before loading any
// weight when the LLM has fewer than 30 layers or the tokenizer lacks the template's tokens.
Result<std::unique_ptr<TextConditioner>> make_flux2_dev_conditioner(
    const FamilyContext& ctx, const models::QwenLlmConfig& llm,
    std::shared_ptr<const MistralTokenizer> tokenizer);

}  // namespace ggdiff
