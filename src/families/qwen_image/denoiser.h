// The Qwen Image DiT (and Qwen Image Layered) as a family's denoiser.
#pragma once

#include <memory>

#include "families/qwen_image/dit.h"
#include "pipeline/family.h"
#include "runtime/module_runner.h"

namespace ggdiff {

class QwenImageDenoiser : public Denoiser {
  public:
    static Result<std::unique_ptr<QwenImageDenoiser>> create(const FamilyContext& ctx,
                                                             const ModuleDevices& where,
                                                             const models::QwenImageConfig& cfg);

    // batch.x [w, h, F * C, n] (F frames, see WanAutoencoder); contexts of equal length are
    // stacked on the batch axis; batch.refs are extra single-frame image tokens, numbered
    // -1, -2, ... on the frame axis for Layered and 1, 2, ... otherwise.
    Result<HostTensor> run(const DenoiseBatch& batch) override;
    void end_phase() override { runner_->end_phase(); }
    // The runner holding the DiT's weights (the family's LoRA target).
    ModuleRunner& runner() { return *runner_; }

    const models::QwenImageConfig& config() const { return cfg_; }

  private:
    models::QwenImageConfig cfg_;
    nn::RopeWrap wrap_;  // --circular*: image rows / columns wrap around
    std::unique_ptr<ModuleRunner> runner_;
};

}  // namespace ggdiff
