// A CLIP text encoder as a family part: tokenizer (with A1111 emphasis, BREAK and
// 77-token windows) plus the CLIP transformer on its placement. SD1/SD2 use one as their
// whole text conditioning; SDXL combines two.
#pragma once

#include <memory>
#include <string>

#include "models/te/clip_text.h"
#include "pipeline/family.h"
#include "runtime/module_runner.h"
#include "tokenizers/clip_tokenizer.h"

namespace ggdiff {

// The CLIP tokenizer for a model: --tokenizer, the merges embedded in the checkpoint, a
// tokenizer/ folder next to the model, else the built-in list (tokenizers/find_tokenizer.h).
Result<std::shared_ptr<const ClipTokenizer>> load_clip_tokenizer(const FamilyContext& ctx);

class ClipTextEncoder {
  public:
    // Builds the encoder over the weights under cfg.prefix; `pad_token` fills the last
    // window (49407 for OpenAI CLIP, 0 for OpenCLIP).
    static Result<std::unique_ptr<ClipTextEncoder>> create(
        const FamilyContext& ctx, const ModuleDevices& where, const models::ClipTextConfig& cfg,
        std::shared_ptr<const ClipTokenizer> tokenizer, int pad_token, const char* label,
        bool pooled_only = false);

    // Hidden states [width, 77 * windows, 1] after the layer clip_skip counts back from the
    // end (1 = last), with each token scaled by its prompt weight and each window's mean
    // restored (A1111's emphasis).
    Result<HostTensor> encode(const std::string& prompt, int clip_skip);
    // The prompt limits (tokenizers/prompt_limits.h) for this encoder's tokenizer.
    Status check(const std::string& prompt, const std::string& what) const;

    // The pooled vector [width] (or [projection] when the weights have text_projection.weight
    // next to text_model.): the final-norm hidden state at the first EOS of the prompt's
    // first window, after every layer (FLUX's and SDXL's pooled CLIP output).
    Result<HostTensor> encode_pooled(const std::string& prompt);

    int64_t pooled_width() const { return projection_.empty() ? cfg_.width : projection_dim_; }
    const models::ClipTextConfig& config() const { return cfg_; }
    ModuleRunner& runner() { return *runner_; }
    void end_phase() { runner_->end_phase(); }

  private:
    ggml_tensor* pooled_graph(GraphBuilder& gb, ggml_tensor* tokens, int64_t index);

    models::ClipTextConfig cfg_;
    std::shared_ptr<const ClipTokenizer> tokenizer_;
    int pad_token_ = 49407;
    std::string projection_;  // text_projection.weight, or empty
    int64_t projection_dim_ = 0;
    std::unique_ptr<ModuleRunner> runner_;
};

// One CLIP encoder as the whole text conditioning (SD1.x, SD2.x).
class ClipConditioner : public TextConditioner {
  public:
    ClipConditioner(std::unique_ptr<ClipTextEncoder> encoder, int default_clip_skip)
        : encoder_(std::move(encoder)), default_clip_skip_(default_clip_skip) {}
    Result<Conditioning> encode(const TextRequest& request) override;
    Status check(const TextRequest& request) const override;
    void end_phase() override { encoder_->end_phase(); }

  private:
    std::unique_ptr<ClipTextEncoder> encoder_;
    int default_clip_skip_;
};

}  // namespace ggdiff
