// The FLUX.2 diffusion transformer as a family's denoiser.
#pragma once

#include <memory>
#include <vector>

#include "families/flux2/dit.h"
#include "pipeline/family.h"
#include "runtime/module_runner.h"

namespace ggdiff {

// The (semantic, texture) model timesteps a dual-time DiT (Flux2Config::dual_time: SeFi-Image)
// is evaluated at next: its sampler sets them before each evaluation, since a batch carries one
// timestep per item.
struct Flux2DualTimesteps {
    float semantic = 1000.0f, texture = 1000.0f;
};

// Takes latents [w, h, in_channels, n] in diffusion space (the VAE's 2x2-patchified,
// normalized 128 channels), the model timestep sigma of each item, and each item's text
// context (all its rows, no mask), stacked on the batch axis. DenoiseBatch::refs (reference
// latents [w_k, h_k, in_channels, 1] in the same space, given once for the batch) join the
// image stream as extra tokens; batch.guidance feeds guidance_in where the DiT has one (dev)
// and is ignored otherwise (klein); DenoiseBatch::skip_layers skips blocks (double block i
// is i, single block i is depth + i).
class Flux2Denoiser : public Denoiser {
  public:
    // Declares and loads the DiT's weights on `where`. A dual-time DiT reads its timesteps
    // from `dual` (required then) instead of the batch's.
    static Result<std::unique_ptr<Flux2Denoiser>> create(
        const FamilyContext& ctx, const ModuleDevices& where, const models::Flux2Config& cfg,
        std::shared_ptr<const Flux2DualTimesteps> dual = nullptr);

    Result<HostTensor> run(const DenoiseBatch& batch) override;
    void end_phase() override { runner_->end_phase(); }

    const models::Flux2Config& config() const { return cfg_; }
    ModuleRunner& runner() { return *runner_; }

  private:
    models::Flux2Config cfg_;
    std::unique_ptr<ModuleRunner> runner_;
    std::shared_ptr<const Flux2DualTimesteps> dual_;
    // RoPE tables of the last (latent width, height, text tokens, reference sizes).
    int64_t pe_w_ = -1, pe_h_ = -1, pe_l_ = -1;
    std::vector<models::Flux2RefSize> pe_refs_;
    nn::RopeWrap wrap_;  // --circular*: image rows / columns wrap around
    models::Flux2Positions pe_;
};

}  // namespace ggdiff
