// The ERNIE-Image DiT as a family's denoiser.
#pragma once

#include <memory>

#include "families/ernie/dit.h"
#include "pipeline/family.h"
#include "runtime/module_runner.h"

namespace ggdiff {

// Takes latents [w, h, in_channels, n] in diffusion space (the FLUX.2 VAE's 2x2-patchified,
// normalized 128 channels), each item's model timestep (1000 * sigma) and text context (all
// its rows, no mask), stacked on the batch axis; returns the flow velocity.
class ErnieImageDenoiser : public Denoiser {
  public:
    // Declares and loads the DiT's weights on `where`.
    static Result<std::unique_ptr<ErnieImageDenoiser>> create(const FamilyContext& ctx,
                                                              const ModuleDevices& where,
                                                              const models::ErnieImageConfig& cfg);

    Result<HostTensor> run(const DenoiseBatch& batch) override;
    void end_phase() override { runner_->end_phase(); }

    const models::ErnieImageConfig& config() const { return cfg_; }
    ModuleRunner& runner() { return *runner_; }

  private:
    models::ErnieImageConfig cfg_;
    std::unique_ptr<ModuleRunner> runner_;
    nn::RopeWrap wrap_;  // --circular*: image rows / columns wrap around
    // RoPE factors of the last (patch grid width, height, text tokens).
    int64_t pe_w_ = -1, pe_h_ = -1, pe_l_ = -1;
    models::ErnieImageRope pe_;
};

}  // namespace ggdiff
