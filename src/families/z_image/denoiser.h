// The Z-Image DiT as a family's denoiser. The sampler's timestep is 1000 * sigma (the
// rectified-flow time map); the model runs at 1000 - that, and its output is already the
// flow velocity (see families/z_image/dit.h).
#pragma once

#include <memory>

#include "families/z_image/dit.h"
#include "pipeline/family.h"
#include "runtime/module_runner.h"

namespace ggdiff {

class ZImageDenoiser : public Denoiser {
  public:
    static Result<std::unique_ptr<ZImageDenoiser>> create(const FamilyContext& ctx,
                                                          const ModuleDevices& where,
                                                          const models::ZImageConfig& cfg);

    // batch.x [w, h, C, n]; the n caption features must have the same token count (they are
    // stacked on the batch axis).
    Result<HostTensor> run(const DenoiseBatch& batch) override;
    void end_phase() override { runner_->end_phase(); }

    const models::ZImageConfig& config() const { return cfg_; }

  private:
    models::ZImageConfig cfg_;
    nn::RopeWrap wrap_;  // --circular*: image rows / columns wrap around
    std::unique_ptr<ModuleRunner> runner_;
};

}  // namespace ggdiff
