// A ControlNet as a part of a UNet denoiser: its own module (placement "controlnet",
// --control-net-cpu) that turns the noisy latent, the timestep, the text context and the
// control image into the residuals the UNet adds to its skip connections.
#pragma once

#include <memory>
#include <vector>

#include "models/diffusion/controlnet.h"
#include "pipeline/family.h"
#include "runtime/module_runner.h"

namespace ggdiff {

class ControlNetPart {
  public:
    // Declares and loads the ControlNet's weights (under "control_model.") on `where`.
    static Result<std::unique_ptr<ControlNetPart>> create(const FamilyContext& ctx,
                                                          const ModuleDevices& where,
                                                          const models::ControlNetConfig& cfg);

    // x [w, h, c, n], timesteps [n], context [ctx, T, n or 1], y [adm, n] or null ->
    // the residuals (one per UNet skip connection, then the middle block), each
    // [w', h', ch, n] and already multiplied by hint.strength.
    Result<std::vector<HostTensor>> run(const HostTensor& x, const HostTensor& timesteps,
                                        const HostTensor& context, const HostTensor* y,
                                        const ControlHint& hint);
    void end_phase() { runner_->end_phase(); }

    const models::ControlNetConfig& config() const { return cfg_; }

  private:
    models::ControlNetConfig cfg_;
    std::unique_ptr<ModuleRunner> runner_;
};

}  // namespace ggdiff
