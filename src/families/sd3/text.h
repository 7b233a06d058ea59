// SD3's text conditioning: CLIP-L and OpenCLIP bigG read the prompt in 77-token windows
// (bigG pads with 0, CLIP-L with EOS); their hidden states after the layer clip_skip counts
// back (default 2: the penultimate, no final norm) are concatenated per token (768 + 1280)
// and zero-padded to the T5 width; T5-XXL reads the prompt in 77-token chunks (76 + EOS,
// padded with 0). Each window's context is the 77 CLIP rows followed by the 77 T5 rows;
// longer prompts append such pairs. The pooled vector is CLIP-L's final-norm state at the
// first EOS (unprojected) followed by bigG's projected one. Prompt weights scale each
// encoder's tokens with its window mean restored. A missing encoder contributes zeros
// (SD3 runs without T5), as the reference engine does.
#pragma once

#include <memory>

#include "pipeline/parts/clip_encoder.h"
#include "pipeline/parts/t5_encoder.h"

namespace ggdiff {

class Sd3Conditioner : public TextConditioner {
  public:
    static constexpr int64_t kClipLWidth = 768, kClipGWidth = 1280;

    // Any encoder may be null (at least one is not); `context_width` is the MMDiT's context
    // width (T5's width when T5 is present).
    Sd3Conditioner(std::unique_ptr<ClipTextEncoder> clip_l, std::unique_ptr<ClipTextEncoder> clip_g,
                   std::unique_ptr<T5TextEncoder> t5,
                   std::shared_ptr<const ClipTokenizer> tokenizer, int64_t context_width,
                   int default_clip_skip);

    Result<Conditioning> encode(const TextRequest& request) override;
    Status check(const TextRequest& request) const override;
    void end_phase() override;

    ClipTextEncoder* clip_l() { return clip_l_.get(); }
    ClipTextEncoder* clip_g() { return clip_g_.get(); }
    T5TextEncoder* t5() { return t5_.get(); }

  private:
    std::unique_ptr<ClipTextEncoder> clip_l_, clip_g_;
    std::unique_ptr<T5TextEncoder> t5_;
    std::shared_ptr<const ClipTokenizer> tokenizer_;
    int64_t context_width_;
    int default_clip_skip_;
};

}  // namespace ggdiff
