// A CLIP text encoder as a family part: tokenizer (with A1111 emphasis, BREAK and
// 77-token windows) plus the CLIP transformer on its placement. SD1/SD2 use one as their
// whole text conditioning; SDXL combines two.
#pragma once

#include <memory>
#include <string>

#include "models/te/clip_text.h"
#include "pipeline/family.h"
#include "pipeline/parts/text_embeddings.h"
#include "runtime/module_runner.h"
#include "tokenizers/clip_tokenizer.h"

namespace ggdiff {

// The CLIP tokenizer for a model: --tokenizer, the merges embedded in the checkpoint, a
// tokenizer/ folder next to the model, else the built-in list (tokenizers/find_tokenizer.h).
Result<std::shared_ptr<const ClipTokenizer>> load_clip_tokenizer(const FamilyContext& ctx);

// The --embd-dir library for CLIP encoders of these token widths (null without --embd-dir).
Result<std::shared_ptr<TextEmbeddings>> open_clip_embeddings(const FamilyContext& ctx,
                                                             std::vector<int64_t> widths,
                                                             std::vector<std::string> encoders);

enum class ClipPooled { No, Also, Only };

class ClipTextEncoder {
  public:
    // Builds the encoder over the weights under cfg.prefix; `pad_token` fills the last
    // window (49407 for OpenAI CLIP, 0 for OpenCLIP). `pooled` says which outputs the
    // encoder's graphs have: the hidden states, both, or only the pooled output (and its
    // projection, when cfg has one).
    static Result<std::unique_ptr<ClipTextEncoder>> create(
        const FamilyContext& ctx, const ModuleDevices& where, const models::ClipTextConfig& cfg,
        std::shared_ptr<const ClipTokenizer> tokenizer, int pad_token, const char* label,
        ClipPooled pooled = ClipPooled::No);

    // Hidden states [width, 77 * windows, 1] after the layer clip_skip counts back from the
    // end (1 = last), with each token scaled by its prompt weight and each window's mean
    // restored (A1111's emphasis). `embeddings`: the prompt's textual inversions (this
    // encoder's table is the first), or null.
    Result<HostTensor> encode(const std::string& prompt, int clip_skip,
                              const PromptEmbeddings* embeddings = nullptr);
    // The prompt limits (tokenizers/prompt_limits.h) for this encoder's tokenizer.
    Status check(const std::string& prompt, const std::string& what) const;

    // One 77-token window: hidden states [width, 77, 1] and, with pooled_index >= 0 and a
    // non-null `pooled`, the pooled (projected) output there (see models::build_clip).
    // `custom`: input vectors that replace the token table's at some positions (textual
    // inversion; see PromptEmbeddings::override_for), or null.
    Result<HostTensor> hidden(const std::vector<int32_t>& ids, int clip_skip, bool final_norm,
                              int64_t pooled_index = -1, HostTensor* pooled = nullptr,
                              const PromptEmbeddings::Override* custom = nullptr);

    // The pooled vector [width] (or [projection_dim] when the config has a projection): the
    // final-norm hidden state at the first EOS of the prompt's first window, after every
    // layer (FLUX's pooled CLIP output).
    Result<HostTensor> encode_pooled(const std::string& prompt);

    int64_t pooled_width() const {
        return cfg_.projection == models::ClipTextConfig::Projection::None ? cfg_.width
                                                                           : cfg_.projection_dim;
    }
    const models::ClipTextConfig& config() const { return cfg_; }
    ModuleRunner& runner() { return *runner_; }
    void end_phase() { runner_->end_phase(); }

  private:
    models::ClipTextConfig cfg_;
    std::shared_ptr<const ClipTokenizer> tokenizer_;
    int pad_token_ = 49407;
    std::unique_ptr<ModuleRunner> runner_;
};

// One CLIP encoder as the whole text conditioning (SD1.x, SD2.x).
class ClipConditioner : public TextConditioner {
  public:
    ClipConditioner(std::unique_ptr<ClipTextEncoder> encoder, int default_clip_skip,
                    std::shared_ptr<TextEmbeddings> embeddings = nullptr)
        : encoder_(std::move(encoder)),
          default_clip_skip_(default_clip_skip),
          embeddings_(std::move(embeddings)) {}
    Result<Conditioning> encode(const TextRequest& request) override;
    Status check(const TextRequest& request) const override;
    void end_phase() override { encoder_->end_phase(); }
    std::string embedding_hashes() override {
        return embeddings_ ? embeddings_->take_hashes() : std::string();
    }

  private:
    std::unique_ptr<ClipTextEncoder> encoder_;
    int default_clip_skip_;
    std::shared_ptr<TextEmbeddings> embeddings_;
};

}  // namespace ggdiff
