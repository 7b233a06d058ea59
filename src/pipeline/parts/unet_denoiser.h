// The LDM UNet (SD1.x, SD2.x, SDXL) as a family's denoiser.
#pragma once

#include <memory>

#include "models/diffusion/unet.h"
#include "pipeline/family.h"
#include "pipeline/parts/control_net.h"
#include "runtime/module_runner.h"

namespace ggdiff {

class UNetDenoiser : public Denoiser {
  public:
    // Declares and loads the UNet's weights on `where`.
    static Result<std::unique_ptr<UNetDenoiser>> create(const FamilyContext& ctx,
                                                        const ModuleDevices& where,
                                                        const models::UNetConfig& cfg);

    // A ControlNet for this UNet (checked with models::check_controlnet_fits); batches
    // with a DenoiseBatch::control then run it first and add its residuals.
    void attach_control(std::unique_ptr<ControlNetPart> control) { control_ = std::move(control); }

    // Contexts of the batch items are stacked on the batch axis; pooled vectors (SDXL's
    // label input y) likewise; batch.concat is appended to every item's input channels.
    Result<HostTensor> run(const DenoiseBatch& batch) override;
    void end_phase() override;

    const models::UNetConfig& config() const { return cfg_; }
    ModuleRunner& runner() { return *runner_; }

  private:
    models::UNetConfig cfg_;
    std::unique_ptr<ModuleRunner> runner_;
    std::unique_ptr<ControlNetPart> control_;
};

}  // namespace ggdiff
