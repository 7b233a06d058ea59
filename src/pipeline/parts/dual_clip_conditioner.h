// SDXL's text conditioning: CLIP ViT-L/14 and OpenCLIP ViT-bigG/14 read the same tokens;
// their hidden states (by default of the penultimate layer, without the final norm) are
// concatenated per token into the cross-attention context, and the label input y is bigG's
// projected pooled output followed by the size conditioning (original size, crop, target
// size as sinusoidal embeddings of 256 each).
#pragma once

#include <memory>
#include <vector>

#include "pipeline/parts/clip_encoder.h"
#include "tokenizers/token_windows.h"

namespace ggdiff {

class DualClipConditioner : public TextConditioner {
  public:
    // `label_width`: the UNet's label input width (pooled width + 6 * 256 for SDXL base).
    DualClipConditioner(std::unique_ptr<ClipTextEncoder> clip_l,
                        std::unique_ptr<ClipTextEncoder> clip_g,
                        std::shared_ptr<const ClipTokenizer> tokenizer, int default_clip_skip,
                        int label_width, std::shared_ptr<TextEmbeddings> embeddings = nullptr)
        : clip_l_(std::move(clip_l)),
          clip_g_(std::move(clip_g)),
          tokenizer_(std::move(tokenizer)),
          default_clip_skip_(default_clip_skip),
          label_width_(label_width),
          embeddings_(std::move(embeddings)) {}

    // An empty negative prompt gives a zero context (its pooled vector stays), as the
    // reference engines do for SDXL.
    Result<Conditioning> encode(const TextRequest& request) override;
    // The conditioning of already laid out token windows (PhotoMaker's prompt with its class
    // word repeated); `emb`: the prompt's textual inversions, or null.
    Result<Conditioning> encode_windows(const TokenWindows& tw, const TextRequest& request,
                                        const PromptEmbeddings* emb = nullptr);
    const ClipTokenizer& tokenizer() const { return *tokenizer_; }
    // The prompt limits (size, CLIP windows) before any compute; both encoders share the
    // tokenizer, so one check covers them.
    Status check(const TextRequest& request) const override {
        return clip_l_->check(request.prompt,
                              request.negative ? "the negative prompt" : "the prompt");
    }
    void end_phase() override {
        clip_l_->end_phase();
        clip_g_->end_phase();
    }
    std::string embedding_hashes() override {
        return embeddings_ ? embeddings_->take_hashes() : std::string();
    }

  private:
    std::unique_ptr<ClipTextEncoder> clip_l_;
    std::unique_ptr<ClipTextEncoder> clip_g_;
    std::shared_ptr<const ClipTokenizer> tokenizer_;
    int default_clip_skip_;
    int label_width_;
    std::shared_ptr<TextEmbeddings> embeddings_;  // --embd-dir: clip_l's, then clip_g's
};

// Sinusoidal embedding of each value (cos half first, max period 10000), `dim` per value,
// appended to `out` (SDXL's size conditioning).
void append_size_embedding(const std::vector<float>& values, int dim, std::vector<float>& out);

}  // namespace ggdiff
