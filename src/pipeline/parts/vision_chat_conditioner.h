// Qwen Image Edit's text conditioning (QwenImageEditPlusPipeline, as stable-diffusion.cpp
// builds it): with -r reference images and a vision tower in the LLM file (or --llm_vision),
// each reference goes through the Qwen2.5-VL vision tower and the prompt becomes the edit
// chat template with one "Picture i: <|vision_start|><|image_pad|>...<|vision_end|>" per
// image; the tower's rows replace the token embeddings from position 70 on (each next image
// 7 tokens after the previous one's rows), the positions the real Qwen2.5 tokenizer gives the
// image pads, and the states from token 64 on condition the DiT. The negative prompt sees the
// same images. Without references it is Qwen Image's text-to-image template.
#pragma once

#include <memory>
#include <vector>

#include "pipeline/family.h"
#include "pipeline/parts/llm_encoder.h"
#include "pipeline/parts/qwen_vision_encoder.h"

namespace ggdiff {

// The edit template for `image_tokens` vision rows per reference image.
ChatTemplate qwen_image_edit_template(const std::vector<int64_t>& image_tokens);
// Where each reference's rows start in the templated prompt (70, then + rows + 7).
std::vector<int64_t> qwen_image_edit_positions(const std::vector<int64_t>& image_tokens);

class QwenEditConditioner : public TextConditioner {
  public:
    // `vision` may be null (no tower: references then only reach the DiT, with a warning).
    QwenEditConditioner(std::unique_ptr<LlmTextEncoder> llm,
                        std::unique_ptr<QwenVisionEncoder> vision, ChatTemplate text_to_image)
        : llm_(std::move(llm)), vision_(std::move(vision)), t2i_(std::move(text_to_image)) {}

    Result<Conditioning> encode(const TextRequest& request) override;
    void end_phase() override;

  private:
    std::unique_ptr<LlmTextEncoder> llm_;
    std::unique_ptr<QwenVisionEncoder> vision_;
    ChatTemplate t2i_;
    // The tower's rows of the images of this text phase (the prompt and the negative prompt
    // read the same images).
    const std::vector<Image>* encoded_for_ = nullptr;
    std::vector<HostTensor> rows_;
    bool warned_ = false;
};

}  // namespace ggdiff
