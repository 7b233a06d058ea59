// The Wan DiT as a family's denoiser: a latent of T frames [w, h, C * T, n] (channel c of
// frame t in plane c * T + t) at the sampler's timestep (sigma * 1000) -> flow velocity.
#pragma once

#include <memory>

#include "families/wan/dit.h"
#include "pipeline/family.h"
#include "runtime/module_runner.h"

namespace ggdiff {

class WanDenoiser : public Denoiser {
  public:
    static Result<std::unique_ptr<WanDenoiser>> create(const FamilyContext& ctx,
                                                       const ModuleDevices& where,
                                                       const models::WanConfig& cfg);

    // Contexts of equal length are stacked on the batch axis.
    Result<HostTensor> run(const DenoiseBatch& batch) override;
    void end_phase() override { runner_->end_phase(); }
    // The runner holding the DiT's weights (the family's LoRA target).
    ModuleRunner& runner() { return *runner_; }

    const models::WanConfig& config() const { return cfg_; }

  private:
    models::WanConfig cfg_;
    std::unique_ptr<ModuleRunner> runner_;
};

}  // namespace ggdiff
