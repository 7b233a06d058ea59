// The Lens DiT as a family's denoiser.
#pragma once

#include <memory>

#include "families/lens/dit.h"
#include "pipeline/family.h"
#include "runtime/module_runner.h"

namespace ggdiff {

// Takes latents [w, h, 128, n] in diffusion space (the FLUX.2 VAE's 2x2-patchified,
// normalized channels), each item's model time (sigma) and text context (all its rows, no
// mask), stacked on the batch axis; returns the flow velocity.
class LensDenoiser : public Denoiser {
  public:
    // Declares and loads the DiT's weights on `where`.
    static Result<std::unique_ptr<LensDenoiser>> create(const FamilyContext& ctx,
                                                        const ModuleDevices& where,
                                                        const models::LensConfig& cfg);

    Result<HostTensor> run(const DenoiseBatch& batch) override;
    void end_phase() override { runner_->end_phase(); }

    const models::LensConfig& config() const { return cfg_; }
    ModuleRunner& runner() { return *runner_; }

  private:
    models::LensConfig cfg_;
    std::unique_ptr<ModuleRunner> runner_;
    nn::RopeWrap wrap_;  // --circular*: image rows / columns wrap around
    // RoPE tables of the last (latent width, height, text tokens).
    int64_t pe_w_ = -1, pe_h_ = -1, pe_l_ = -1;
    models::LensRope pe_;
};

}  // namespace ggdiff
