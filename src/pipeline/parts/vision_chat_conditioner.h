// An LLM text encoder that also reads the -r reference images through a Qwen2.5-VL vision
// tower, as stable-diffusion.cpp's edit conditioners do (Qwen Image Edit, LongCat-Image-Edit):
// each reference is resized for the tower (models::qwen_vision_size) and encoded; the prompt
// goes into the family's edit chat template, which holds one run of <|image_pad|> tokens per
// image; the tower's rows then replace token embeddings at positions fixed by the family (not
// searched in the tokens: the reference uses constants tuned to the real Qwen2.5 tokenizer).
// The negative prompt sees the same images. Without references, or without a tower, the
// family's text-to-image template is used.
#pragma once

#include <memory>
#include <vector>

#include "pipeline/family.h"
#include "pipeline/parts/llm_encoder.h"
#include "pipeline/parts/qwen_vision_encoder.h"

namespace ggdiff {

// A family's edit chat: the template for `image_tokens` vision rows per reference image, and
// where the rows go: the first image's at `first_image_token`, each next one `tokens_between`
// tokens after the previous image's rows end.
struct VisionChat {
    ChatTemplate (*make_template)(const std::vector<int64_t>& image_tokens) = nullptr;
    int64_t first_image_token = 0;
    int64_t tokens_between = 0;

    std::vector<int64_t> positions(const std::vector<int64_t>& image_tokens) const;
};

class VisionChatConditioner : public TextConditioner {
  public:
    // `vision` may be null (no tower: references then only reach the DiT, with a warning).
    VisionChatConditioner(std::unique_ptr<LlmTextEncoder> llm,
                          std::unique_ptr<QwenVisionEncoder> vision, ChatTemplate text_to_image,
                          VisionChat edit)
        : llm_(std::move(llm)),
          vision_(std::move(vision)),
          t2i_(std::move(text_to_image)),
          edit_(edit) {}

    Result<Conditioning> encode(const TextRequest& request) override;
    void end_phase() override;

  private:
    std::unique_ptr<LlmTextEncoder> llm_;
    std::unique_ptr<QwenVisionEncoder> vision_;
    ChatTemplate t2i_;
    VisionChat edit_;
    // The tower's rows of the images of this text phase (the prompt and the negative prompt
    // read the same images).
    const std::vector<Image>* encoded_for_ = nullptr;
    std::vector<HostTensor> rows_;
    bool warned_ = false;
};

}  // namespace ggdiff
