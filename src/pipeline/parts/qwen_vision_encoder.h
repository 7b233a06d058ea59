// Qwen Image Edit's reference images through the Qwen2.5-VL vision tower: the image resized
// as the reference's edit conditioner does (smart resize to multiples of 28, nearest-neighbour
// scale to cover, centre crop, CLIP normalization), then the tower on its placement. The rows
// that come back replace the <|image_pad|> token embeddings of the LLM prompt.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "image/image.h"
#include "models/te/qwen_vision.h"
#include "pipeline/family.h"
#include "runtime/module_runner.h"

namespace ggdiff {

// The reference's clip_preprocess: `image` (any channel count; grey and alpha become RGB) as
// floats in [0, 1], resized (nearest, source pixel floor(i * in / out)) by the larger of
// width / image width and height / image height, the centre width x height kept, clamped to
// [0, 1] and normalized with CLIP's mean and std -> [width, height, 3].
HostTensor clip_preprocess(const Image& image, int width, int height);

// The Qwen2.5-VL vision tower under `llm_prefix` (in the LLM file, or --llm_vision), checked
// against the LLM's width `llm_hidden`; none when the files have none (an error when
// --llm_vision was given).
Result<std::optional<models::QwenVisionConfig>> find_qwen_vision_tower(
    const FamilyContext& ctx, const std::string& llm_prefix, int64_t llm_hidden);

class QwenVisionEncoder {
  public:
    static Result<std::unique_ptr<QwenVisionEncoder>> create(const FamilyContext& ctx,
                                                             const ModuleDevices& where,
                                                             const models::QwenVisionConfig& cfg);

    // [out_dim, tokens, 1]: one row per 2x2 patches of the resized image, in raster order
    // (tokens = (h_bar / 28) * (w_bar / 28), see models::qwen_vision_size).
    Result<HostTensor> encode(const Image& rgb);

    void end_phase() { runner_->end_phase(); }
    const models::QwenVisionConfig& config() const { return cfg_; }

  private:
    models::QwenVisionConfig cfg_;
    std::unique_ptr<ModuleRunner> runner_;
};

}  // namespace ggdiff
