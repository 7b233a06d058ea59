// Wan 2.1 image-to-video's image features: the image through the CLIP vision tower
// (--clip_vision, ViT-H/14), preprocessed as the reference engine does (clip_preprocess:
// nearest-neighbour scale to cover, centre crop, CLIP normalization), on the placement's
// clip_vision devices.
#pragma once

#include <memory>

#include "image/image.h"
#include "models/te/clip_vision.h"
#include "pipeline/family.h"
#include "runtime/module_runner.h"

namespace ggdiff {

class ClipVisionEncoder {
  public:
    static Result<std::unique_ptr<ClipVisionEncoder>> create(const FamilyContext& ctx,
                                                             const ModuleDevices& where,
                                                             const models::ClipVisionConfig& cfg);

    // [width, positions, 1] (ViT-H/14: [1280, 257, 1]): the last encoder layer's hidden
    // states, class token first, without the post-layernorm.
    Result<HostTensor> encode(const Image& rgb);

    void end_phase() { runner_->end_phase(); }
    const models::ClipVisionConfig& config() const { return cfg_; }

  private:
    models::ClipVisionConfig cfg_;
    std::unique_ptr<ModuleRunner> runner_;
};

}  // namespace ggdiff
